"""The game world in the admin.

Campaigns are read here, not built: `campaign_create` makes them (owner membership, guardian
permission, first episode) and tools change them under the audit log. So the admin edits only a
campaign's name and approval policy, and never deletes one, which would take its append-only log
with it. Turns are read-only; "Undo turn" goes through `turn_undo` like the API.
"""

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from audit.models import ToolInvocation
from campaigns.models import (
    ApprovalPolicyChange,
    Campaign,
    ChatMessage,
    Creature,
    InventoryItem,
    Membership,
    Resource,
    Turn,
)
from campaigns.services import campaign_set_approval_policy
from core.api.base import client_ip
from gm.base import GMError
from gm.providers import provider_for, seats
from gm.replay import turn_message, turn_replay
from web.admin import display
from web.admin.filters import CampaignFilter, StatusFilter
from web.admin.pagination import EstimatedCountPaginator
from web.admin.reverting import (
    TURN,
    LogReaderMixin,
    ReadOnlyMixin,
    RevertPageMixin,
    can_read_log,
)


class ReadOnlyInline(ReadOnlyMixin, admin.TabularInline):
    extra = 0
    can_delete = False
    related: tuple[str, ...] = ()

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or can_read_log(request.user)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.fields

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related(*self.related)


class MembershipInline(ReadOnlyInline):
    model = Membership
    fields = ("user", "role", "joined_at")
    related = ("user", "campaign")  # both named in each row's title


class CreatureInline(ReadOnlyInline):
    model = Creature
    fields = Creature.SHOWN
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


class PolicyChangeInline(ReadOnlyInline):
    model = ApprovalPolicyChange
    fields = ("at", "by", "from_policy", "to_policy", "via")
    related = ("by",)
    ordering = ("-at", "-id")
    verbose_name_plural = "approval policy changes"


@admin.register(Campaign)
class CampaignAdmin(ReadOnlyMixin, LogReaderMixin, admin.ModelAdmin):
    changeable = True  # the name and the approval policy only: the rest is in readonly_fields
    list_display = ("name", "owner", "status", "approval_policy", "created")
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
    inlines = (
        MembershipInline,
        CreatureInline,
        ResourceInline,
        InventoryInline,
        PolicyChangeInline,
    )
    created = display.time_column("created_at", "created")

    class Media:
        css = {"all": ["audit/admin.css"]}

    @admin.display(description="log")
    def log(self, campaign: Campaign) -> SafeString:
        invocations = reverse("admin:audit_toolinvocation_changelist")
        turns = reverse("admin:campaigns_turn_changelist")
        analytics = reverse("admin:audit_toolinvocation_analytics")
        return format_html(
            '<a href="{}?campaign={}">Tool invocations</a> · <a href="{}?campaign={}">Turns</a>'
            ' · <a href="{}?campaign={}">Analytics</a>',
            invocations,
            campaign.pk,
            turns,
            campaign.pk,
            analytics,
            campaign.pk,
        )

    def save_model(self, request: HttpRequest, obj: Campaign, form: Any, change: bool) -> None:
        """Write only the fields the form changed: tools and the event counter change the
        campaign row concurrently, and a full save would put back what this page read. The
        policy goes through the service that logs the change."""
        changed = [name for name in form.changed_data if name != "approval_policy"]
        if changed:
            obj.save(update_fields=changed)
        if "approval_policy" in form.changed_data:
            campaign_set_approval_policy(
                campaign=obj,
                by=request.user,
                policy=form.cleaned_data["approval_policy"],
                via=ApprovalPolicyChange.Via.ADMIN,
                ip=client_ip(request),
            )


class ChatMessageInline(ReadOnlyInline):
    model = ChatMessage
    fields = ("created_at", "role", "source", "author", "content", "reverted")
    related = ("author",)
    verbose_name_plural = "messages"


class TurnInvocationInline(display.InvocationColumns, ReadOnlyInline):
    model = ToolInvocation
    fk_name = "turn"
    fields = ("invocation", "tier", "status", "summary", "model", "created_at", "reverted_at")
    ordering = ("-sequence",)
    verbose_name_plural = "tool invocations"
    _names: dict[int, str] | None = None

    def creature_names(self, row: ToolInvocation) -> dict[int, str]:
        """Read once: an inline is made anew for each request, and its rows are one turn's."""
        if self._names is None:
            self._names = super().creature_names(row)
        return self._names


class ReplayForm(forms.Form):
    provider = forms.ChoiceField(label="GM", choices=[])
    model = forms.CharField(label="Model (optional)", required=False, max_length=120)

    def __init__(self, *args: Any, seats: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["provider"].choices = [(name, seat.label) for name, seat in seats.items()]


@admin.register(Turn)
class TurnAdmin(ReadOnlyMixin, RevertPageMixin, LogReaderMixin, admin.ModelAdmin):
    reverting = TURN
    list_display = ("id", "when", "campaign", "actor", "status", "undone")
    list_select_related = ("campaign", "actor")
    list_filter = (StatusFilter, CampaignFilter, "created_at")
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
        *Turn.REVERT_FIELDS,
    )
    readonly_fields = fields
    inlines = (ChatMessageInline, TurnInvocationInline)
    actions = ["replay_selected"]
    when = display.time_column("created_at", "when")
    undone = display.time_column("reverted_at", "undone")

    @admin.action(description="Replay the selected turn against another model (nothing kept)")
    def replay_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        """One turn at a time: a form for the GM (one of this server's seats) and a model, then
        both models side by side. `gm.replay.turn_replay` decides who may (and records a
        refusal); nothing it runs is kept."""
        turns = list(queryset.select_related("campaign")[:2])
        if len(turns) != 1:
            self.message_user(request, "Select exactly one turn to replay.", "error")
            return None
        turn = turns[0]
        form = ReplayForm(request.POST if "replay" in request.POST else None, seats=seats())
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Replay turn {turn.pk}",
            "turn": turn,
            "form": form,
            "message": turn_message(turn),
        }
        if form.is_valid():
            try:
                provider = provider_for(
                    form.cleaned_data["provider"], model=form.cleaned_data["model"] or None
                )
                context["replay"] = turn_replay(
                    turn_id=turn.pk, provider=provider, by=request.user, ip=client_ip(request)
                )
            except GMError as exc:
                context["error"] = str(exc)
        return TemplateResponse(request, "admin/campaigns/turn/replay.html", context)

    class Media:
        css = {"all": ["audit/admin.css"]}
