"""The invocation log in the admin: browse, filter, read, and revert through the service."""

from operator import attrgetter
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.contrib.auth import get_user_model
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from audit.models import ToolInvocation
from campaigns.models import Campaign
from campaigns.selectors import creature_names_in
from web.admin import approving, display
from web.admin.analytics import analytics_page
from web.admin.filters import (
    CampaignFilter,
    ModelFilter,
    SourceFilter,
    StatusFilter,
    ToolFilter,
    distinct_values,
)
from web.admin.pagination import EstimatedCountPaginator
from web.admin.reverting import (
    INVOCATION,
    LogReaderMixin,
    ReadOnlyMixin,
    ReasonForm,
    RevertPageMixin,
    revert_and_report,
)
from web.shared import ascii_uuid

LIST_DEFERRED = (
    "input",
    "result",
    "error",
    "revert_snapshot",
    "post_state",
    "write_set",
    "read_set",
    "broadcast_events",
    "revert_reason",
)


class InvocationChangeList(ChangeList):
    """The list shows none of the JSON columns, so it does not read them: snapshots and
    post-states are the bulk of a row."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
        """With, for a held call that was approved, the number of the row it ran as (a
        subquery per listed row, on the `approval_of` index): its status column says so
        instead of a "pending" that would stand for ever beside that row."""
        ran_as = ToolInvocation.objects.filter(approval_of=OuterRef("pk")).values("sequence")[:1]
        queryset = super().get_queryset(request, exclude_parameters).defer(*LIST_DEFERRED)
        return queryset.annotate(ran_as_sequence=Subquery(ran_as))


@admin.register(ToolInvocation)
class ToolInvocationAdmin(
    display.InvocationColumns, ReadOnlyMixin, RevertPageMixin, LogReaderMixin, admin.ModelAdmin
):
    reverting = INVOCATION
    # Columns that fit a 1280 px screen beside the filters: the model and the source are
    # filters and on the detail page.
    list_display = ("when", "campaign_link", "by", "turn_link", "tool_name", "tier", "state")
    list_display_links = ("when",)
    list_filter = (
        StatusFilter,
        "tool_tier",
        ToolFilter,
        ModelFilter,
        SourceFilter,
        CampaignFilter,
        "created_at",
    )
    list_select_related = ("campaign", "user", "requested_by")
    search_fields = ("id", "campaign__name", "user__username", "tool_name")
    search_help_text = "An invocation or campaign id, a campaign name, an actor or a tool."
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    sortable_by = ("when",)
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    actions = ["revert_selected", "approve_selected", "reject_selected"]
    bulk_limit = 500
    fieldsets = (
        (
            "Call",
            {
                "fields": (
                    "id",
                    "sequence",
                    "campaign",
                    "turn",
                    "user",
                    "requested_by",
                    "tool_name",
                    "summary",
                    "tier",
                    "status",
                    "model",
                    "source",
                    "created_at",
                    "committed_at",
                )
            },
        ),
        ("Approval", {"fields": ("preview_diff", "approval_answer", "ran_as", "approval_of")}),
        ("Revert", {"fields": ("revertible", *ToolInvocation.REVERT_FIELDS)}),
        ("Input and result", {"fields": ("input_json", "result_json", "error")}),
        (
            "State",
            {"fields": ("entity_diff", "snapshot_json", "post_state_json", "write_set_json")},
        ),
        ("Broadcast", {"classes": ("collapse",), "fields": ("broadcast_json",)}),
        (
            "Tamper evidence (manage.py verify_log)",
            {"classes": ("collapse",), "fields": ("prev_hash", "row_hash")},
        ),
    )
    readonly_fields = [name for _, section in fieldsets for name in section["fields"]]

    class Media:
        css = {"all": ["audit/admin.css"]}

    def get_urls(self) -> list:
        """The analytics page sits beside the log it counts (before the object routes)."""
        view = self.admin_site.admin_view(self.analytics_view)
        return [
            path("analytics/", view, name="audit_toolinvocation_analytics"),
            *super().get_urls(),
        ]

    def analytics_view(self, request: HttpRequest) -> Any:
        return analytics_page(self, request)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return InvocationChangeList

    @admin.display(description="campaign", ordering="campaign__name")
    def campaign_link(self, row: ToolInvocation) -> SafeString:
        return format_html('<a href="?campaign={}">{}</a>', row.campaign_id, row.campaign)

    when = display.time_column("created_at", "when")

    @admin.display(description="by")
    def by(self, row: ToolInvocation) -> str:
        """The actor whose turn it is; `owner for alice` when someone else made the call."""
        actor = row.user.get_username()
        if row.requested_by_id is None:
            return actor
        return f"{row.requested_by.get_username()} for {actor}"

    @admin.display(description="turn")
    def turn_link(self, row: ToolInvocation) -> SafeString | str:
        """ "Turn 9", as the turn's own page is titled: "#" numbers only calls."""
        if row.turn_id is None:
            return "—"
        url = reverse("admin:campaigns_turn_change", args=[row.turn_id])
        return format_html('<a href="{}">Turn {}</a>', url, row.turn_id)

    @admin.display(description="status", ordering="status")
    def state(self, row: ToolInvocation) -> str:
        """The status; a held call that was approved reads "approved: ran as #17", pointing at
        the row that did the work, rather than the "pending" its row keeps."""
        ran_as = getattr(row, "ran_as_sequence", None)
        if row.status == ToolInvocation.Status.PENDING and ran_as is not None:
            return f"approved: ran as #{ran_as}"
        return row.get_status_display()

    input_json = display.json_column("input", attrgetter("input"))
    result_json = display.json_column("result", attrgetter("result"))
    snapshot_json = display.json_column("revert snapshot", attrgetter("revert_snapshot"))
    post_state_json = display.json_column("post-state", attrgetter("post_state"))
    write_set_json = display.json_column(
        "write set", lambda row: {"writes": row.write_set, "reads": row.read_set}
    )
    broadcast_json = display.json_column("broadcast events", attrgetter("broadcast_events"))

    @admin.display(description="before → after")
    def entity_diff(self, row: ToolInvocation) -> SafeString:
        return display.render_entity_diff(row)

    @admin.display(description="preview (held for approval)")
    def preview_diff(self, row: ToolInvocation) -> SafeString | str:
        return approving.preview_table(row)

    @admin.display(description="answered")
    def approval_answer(self, row: ToolInvocation) -> str:
        return approving.answer_text(row)

    @admin.display(description="ran as")
    def ran_as(self, row: ToolInvocation) -> Any:
        return approving.approved_run(row)

    @admin.action(description="Approve selected calls held for approval")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._answer_selected(request, queryset, approve=True)

    @admin.action(description="Reject selected calls held for approval")
    def reject_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._answer_selected(request, queryset, approve=False)

    def _answer_selected(self, request: HttpRequest, queryset: QuerySet, *, approve: bool) -> None:
        """Oldest first, as they were asked; one message per row. The approval queue is the
        list filtered to `awaiting_approval`; a selected row that is not waiting is reported
        as answered."""
        rows = list(queryset.defer(None).order_by("created_at", "sequence")[: self.bulk_limit + 1])
        if len(rows) > self.bulk_limit:
            self.message_user(request, f"Select at most {self.bulk_limit} calls.", "error")
            return
        for row in rows:
            approving.answer_and_report(request, row, approve=approve)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """Each word is first resolved to ids in the small tables (campaigns, users) and the
        tool index, so the log itself is only read through its indexes: an id finds the
        invocation or the calls of that campaign; a word matches campaign names, actor
        usernames and tool names."""
        for word in search_term.split():
            queryset = queryset.filter(self._word_query(word))
        return queryset, False

    def _word_query(self, word: str) -> Q:
        try:
            exact = ascii_uuid(word)
        except ValueError:
            campaigns = Campaign.objects.filter(name__icontains=word).values_list("pk", flat=True)
            users = get_user_model().objects.filter(username__icontains=word)
            tools = [t for t in distinct_values(ToolInvocation, "tool_name") if word.lower() in t]
            return (
                Q(campaign_id__in=list(campaigns))
                | Q(user_id__in=list(users.values_list("pk", flat=True)))
                | Q(tool_name__in=tools)
            )
        return Q(pk=exact) | Q(campaign_id=exact)

    @admin.action(description="Revert selected tool invocations")
    def revert_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        """Newest first, so a later call that depends on an earlier selected one is reverted
        before it and no conflict arises between them. One message per row, so at most
        `bulk_limit` rows at a time ("select all" on a log of millions is refused)."""
        rows = list(
            queryset.defer(None)
            .select_related("campaign")
            .order_by("-created_at", "-sequence")[: self.bulk_limit + 1]
        )
        if len(rows) > self.bulk_limit:
            self.message_user(
                request, f"Select at most {self.bulk_limit} invocations to revert.", "error"
            )
            return None
        form = ReasonForm(request.POST if "confirm" in request.POST else None)
        if not form.is_valid():
            names = creature_names_in(campaign_ids={row.campaign_id for row in rows})
            context = {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Revert the selected tool invocations?",
                "rows": [(row, display.summary(row, names)) for row in rows],
                "form": form,
                "media": self.media,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                "cancel_url": reverse("admin:audit_toolinvocation_changelist"),
            }
            return TemplateResponse(
                request, "admin/audit/toolinvocation/revert_selected_confirmation.html", context
            )
        for row in rows:
            revert_and_report(
                request,
                row,
                reason=form.cleaned_data["reason"],
                cascade=False,
                cascade_url=self.revert_url(row) + "?cascade=1",
            )
        return None
