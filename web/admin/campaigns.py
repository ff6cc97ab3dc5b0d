"""The game world in the admin.

Campaigns are read here, not built: `campaign_create` makes them (owner membership, guardian
permission, first episode) and tools change them under the audit log. So the admin edits only a
campaign's name and approval policy, and never deletes one, which would take its append-only log
with it. Turns are read-only; "Undo turn" goes through `turn_undo` like the API.
"""

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from audit.models import ToolInvocation
from audit.permissions import may_revert
from campaigns.models import (
    Campaign,
    ChatMessage,
    Creature,
    InventoryItem,
    Membership,
    Resource,
    Turn,
)
from core.errors import Forbidden, NotFound
from web.admin import display
from web.admin.filters import CampaignFilter
from web.admin.pagination import EstimatedCountPaginator
from web.admin.reverting import (
    LogReaderMixin,
    Outcome,
    RevertForm,
    can_read_log,
    confirmation_page,
    plan_for,
    undo_and_report,
)


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    related: tuple[str, ...] = ()

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or can_read_log(request.user)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related(*self.related)


class MembershipInline(ReadOnlyInline):
    model = Membership
    fields = ("user", "role", "joined_at")
    related = ("user",)


class CreatureInline(ReadOnlyInline):
    model = Creature
    fields = (
        "name",
        "kind",
        "hp",
        "max_hp",
        "temp_hp",
        "conditions",
        "death_save_successes",
        "death_save_failures",
        "x",
        "y",
        "controlled_by",
    )
    related = ("controlled_by",)


class ResourceInline(ReadOnlyInline):
    model = Resource
    fk_name = "campaign"
    fields = ("creature", "name", "current", "maximum", "recharge")
    related = ("creature",)


class InventoryInline(ReadOnlyInline):
    model = InventoryItem
    fk_name = "campaign"
    fields = ("creature", "name", "quantity")
    related = ("creature",)
    verbose_name_plural = "inventory"


@admin.register(Campaign)
class CampaignAdmin(LogReaderMixin, admin.ModelAdmin):
    list_display = ("name", "owner", "status", "approval_policy", "created_at")
    list_select_related = ("owner",)
    list_filter = ("status", "approval_policy")
    search_fields = ("name", "owner__username")
    ordering = ("-created_at",)
    fields = (
        "id",
        "name",
        "owner",
        "approval_policy",
        "status",
        "completed_at",
        "current_chapter",
        "active_dungeon",
        "active_encounter",
        "scene",
        "location",
        "created_at",
        "log",
    )
    readonly_fields = tuple(f for f in fields if f not in ("name", "approval_policy"))
    inlines = (MembershipInline, CreatureInline, ResourceInline, InventoryInline)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="log")
    def log(self, campaign: Campaign) -> SafeString:
        invocations = reverse("admin:audit_toolinvocation_changelist")
        turns = reverse("admin:campaigns_turn_changelist")
        return format_html(
            '<a href="{}?campaign={}">Tool invocations</a> · <a href="{}?campaign={}">Turns</a>',
            invocations,
            campaign.pk,
            turns,
            campaign.pk,
        )

    def save_model(self, request: HttpRequest, obj: Campaign, form: Any, change: bool) -> None:
        """Write only the fields the form changed: tools and the event counter change the
        campaign row concurrently, and a full save would put back what this page read."""
        obj.save(update_fields=form.changed_data)


class ChatMessageInline(ReadOnlyInline):
    model = ChatMessage
    fields = ("created_at", "role", "source", "author", "content", "reverted")
    related = ("author",)
    verbose_name_plural = "messages"


class TurnInvocationInline(ReadOnlyInline):
    model = ToolInvocation
    fk_name = "turn"
    fields = ("invocation", "tier", "status", "summary", "model", "created_at", "reverted_at")
    ordering = ("-sequence",)
    verbose_name_plural = "tool invocations"

    @admin.display(description="invocation")
    def invocation(self, row: ToolInvocation) -> SafeString:
        return display.invocation_link(row)

    @admin.display(description="tier")
    def tier(self, row: ToolInvocation) -> SafeString:
        return display.tier_badge(row.tool_tier)

    @admin.display(description="what it did")
    def summary(self, row: ToolInvocation) -> str:
        return display.summary(row)


@admin.register(Turn)
class TurnAdmin(LogReaderMixin, admin.ModelAdmin):
    list_display = ("id", "created_at", "campaign", "actor", "status", "reverted_at")
    list_select_related = ("campaign", "actor")
    list_filter = ("status", CampaignFilter, "created_at")
    search_fields = ("campaign__name", "actor__username")
    ordering = ("-created_at",)
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    fields = (
        "id",
        "campaign",
        "actor",
        "status",
        "created_at",
        "reverted_at",
        "reverted_by",
        "revert_reason",
    )
    readonly_fields = fields
    inlines = (ChatMessageInline, TurnInvocationInline)

    class Media:
        css = {"all": ["audit/admin.css"]}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list:
        undo = self.admin_site.admin_view(self.undo_view)
        return [
            path("<path:object_id>/undo/", undo, name="campaigns_turn_undo"),
            *super().get_urls(),
        ]

    def render_change_form(
        self, request: HttpRequest, context: dict, *args: Any, obj: Any = None, **kwargs: Any
    ) -> HttpResponse:
        """The detail page offers "Undo turn" while the turn stands and the policy lets this
        user undo it."""
        standing = obj is not None and obj.reverted_at is None
        if standing and may_revert(user=request.user, campaign=obj.campaign, actor_id=obj.actor_id):
            context["undo_url"] = self._undo_url(obj)
        return super().render_change_form(request, context, *args, obj=obj, **kwargs)

    def undo_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: the plan and a reason to give. POST: undo through the service."""
        turn = self.get_object(request, unquote(object_id))
        if turn is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_view_permission(request, turn):
            raise PermissionDenied
        change_url = reverse("admin:campaigns_turn_change", args=[turn.pk])
        cascade_url = self._undo_url(turn) + "?cascade=1"
        form = RevertForm(request.POST or None, initial={"cascade": "cascade" in request.GET})
        if request.method == "POST" and form.is_valid():
            outcome = undo_and_report(request, turn, cascade_url=cascade_url, **form.cleaned_data)
            if outcome is not Outcome.CONFLICT:
                return redirect(change_url)
        try:
            plan = plan_for(
                request,
                campaign_id=turn.campaign_id,
                turn_id=turn.pk,
                cascade=bool(form["cascade"].value()),
            )
        except (Forbidden, NotFound):
            self.message_user(request, f"Turn {turn.pk}: you may not undo it.", level="error")
            return redirect(change_url)
        return confirmation_page(
            request,
            self,
            obj=turn,
            title=f"Undo turn {turn.pk}?",
            form=form,
            plan=plan,
            cascade_url=cascade_url,
            cancel_url=change_url,
        )

    def _undo_url(self, turn: Turn) -> str:
        return reverse("admin:campaigns_turn_undo", args=[turn.pk])
