"""Reverting from the admin: the same services and the same policy function as the API, with
each outcome told to staff in words. Denials are recorded as SecurityEvents by the services."""

from enum import Enum
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from audit.models import ToolInvocation
from audit.services import invocation_revert, invocation_revert_plan, turn_undo, turn_undo_plan
from campaigns.models import Turn
from core.api.base import client_ip
from core.errors import Conflict, Forbidden, NotFound
from web.admin.display import compact_json, invocation_link

SKIP_REASONS = {
    "already_reverted": "it was already reverted",
    "not_committed": "it never committed, so there is nothing to revert",
    "not_revertible": "no snapshot was captured, so it cannot be reverted faithfully",
}
DENIED = "you may not revert in this campaign"


class Outcome(Enum):
    REVERTED = "reverted"
    SKIPPED = "skipped"
    CONFLICT = "conflict"
    DENIED = "denied"


class RevertForm(forms.Form):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 70}),
        help_text="Recorded on every reverted invocation and shown to the table.",
    )
    cascade = forms.BooleanField(
        required=False,
        label="Cascade",
        help_text="Also revert, newest first, the later invocations that depend on this.",
    )


def can_read_log(user: Any) -> bool:
    return user.is_active and user.is_staff and user.has_perm("audit.revert_toolinvocation")


class LogReaderMixin:
    """Staff holding the global revert permission may read what they may revert: the log,
    turns and campaigns, without separate view permissions."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or can_read_log(request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or can_read_log(request.user)


def skip_text(code: str) -> str:
    return f"{SKIP_REASONS.get(code, code)} ({code})"


def conflict_text(conflicts: list[str], cascade_url: str) -> SafeString:
    rows = ToolInvocation.objects.filter(pk__in=conflicts).order_by("-created_at", "-sequence")
    return format_html(
        'later invocations depend on what it wrote: {}. <a href="{}">Revert with cascade</a>',
        format_html_join(", ", "{}", ((invocation_link(r),) for r in rows)),
        cascade_url,
    )


def revert_and_report(
    request: HttpRequest, row: ToolInvocation, *, reason: str, cascade: bool, cascade_url: str
) -> Outcome:
    """Revert one invocation through `invocation_revert` and add one message saying how it
    went: reverted, skipped (with the reason), a conflict naming the later invocations, or
    denied."""
    name = invocation_link(row)
    try:
        result = invocation_revert(
            campaign_id=row.campaign_id,
            invocation_id=row.pk,
            user=request.user,
            reason=reason,
            cascade=cascade,
            ip=client_ip(request),
        )
    except Conflict as conflict:
        text = conflict_text(conflict.conflicts, cascade_url)
        messages.error(request, format_html("{}: not reverted, {}", name, text))
        return Outcome.CONFLICT
    except (Forbidden, NotFound):
        messages.error(request, format_html("{}: not reverted, {}.", name, DENIED))
        return Outcome.DENIED
    if not result.reverted:
        text = skip_text(result.skip_reason)
        messages.warning(request, format_html("{}: skipped, {}.", name, text))
        return Outcome.SKIPPED
    cascaded = len(result.details["cascaded"])
    also = f" together with {cascaded} later invocation(s)" if cascaded else ""
    messages.success(request, format_html("{}: reverted{}.", name, also))
    return Outcome.REVERTED


def undo_and_report(
    request: HttpRequest, turn: Turn, *, reason: str, cascade: bool, cascade_url: str
) -> Outcome:
    """Undo a turn through `turn_undo` and report what was reverted and what was skipped."""
    try:
        result = turn_undo(
            campaign_id=turn.campaign_id,
            turn_id=turn.pk,
            user=request.user,
            reason=reason,
            cascade=cascade,
            ip=client_ip(request),
        )
    except Conflict as conflict:
        text = conflict_text(conflict.conflicts, cascade_url)
        messages.error(request, format_html("Turn {} not undone: {}", turn.pk, text))
        return Outcome.CONFLICT
    except (Forbidden, NotFound):
        messages.error(request, f"Turn {turn.pk} not undone: {DENIED}.")
        return Outcome.DENIED
    messages.success(
        request, f"Turn {turn.pk} undone: {len(result.reverted)} invocation(s) reverted."
    )
    rows = _rows_by_id([skip["id"] for skip in result.skipped])
    for skip in result.skipped:
        text = skip_text(skip["skip_reason"])
        messages.info(
            request, format_html("{}: skipped, {}.", invocation_link(rows[skip["id"]]), text)
        )
    return Outcome.REVERTED if result.reverted else Outcome.SKIPPED


def plan_for(request: HttpRequest, **target: Any) -> dict[str, Any]:
    """`invocation_revert_plan`, or `turn_undo_plan` given a `turn_id`, ready for the
    confirmation page: each invocation and conflict linked, each diff value as JSON. Raises
    what the service raises."""
    plan_of = turn_undo_plan if "turn_id" in target else invocation_revert_plan
    plan = plan_of(user=request.user, ip=client_ip(request), **target)
    rows = _rows_by_id([item["id"] for item in plan["invocations"]] + plan["conflicts"])
    return {
        "invocations": [
            {
                **item,
                "link": invocation_link(rows[item["id"]]),
                "skip_text": skip_text(item["skip_reason"]) if item["skip_reason"] else "",
            }
            for item in plan["invocations"]
        ],
        "conflicts": [invocation_link(rows[pk]) for pk in plan["conflicts"]],
        "diff": [
            {**change, **{k: compact_json(change[k]) for k in ("before", "after", "now")}}
            for change in plan["diff"]
        ],
    }


def confirmation_page(
    request: HttpRequest, model_admin: Any, *, obj: Any, title: str, form: RevertForm, **extra: Any
) -> TemplateResponse:
    """The page that shows the plan and asks for a reason before anything is reverted."""
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "object": obj,
        "form": form,
        "media": model_admin.media + form.media,
        **extra,
    }
    return TemplateResponse(request, "admin/audit/revert_confirmation.html", context)


def _rows_by_id(ids: list[str]) -> dict[str, ToolInvocation]:
    return {str(row.pk): row for row in ToolInvocation.objects.filter(pk__in=ids)}
