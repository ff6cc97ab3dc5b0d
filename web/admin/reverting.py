"""Reverting from the admin: the same services and the same policy as the API, with each
outcome told to staff in words. Every refusal leaves a SecurityEvent: the services record
their own, `web.admin.refusals` the rest."""

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import capfirst

from ai_tools.base import Names
from audit.models import SkipReason, ToolInvocation
from audit.selectors import reads_every_campaign, viewer_rights
from audit.services import (
    invocation_revert,
    invocation_revert_plan,
    turn_undo,
    turn_undo_plan,
)
from audit.services.revert import skip_reason
from campaigns.models import Turn
from campaigns.selectors import creature_names_in
from core.api.base import client_ip
from core.errors import Conflict, Forbidden
from web.admin.display import compact_json, invocation_link, label, summary
from web.admin.refusals import NO_PERMISSION, admin_denial, service_refusals

SKIP_REASONS = {
    SkipReason.ALREADY_REVERTED: "it was already reverted",
    SkipReason.NOT_COMMITTED: "it never committed, so there is nothing to revert",
    SkipReason.NOT_REVERTIBLE: "no snapshot was captured, so it cannot be reverted faithfully",
}
DENIED = "you may not revert in this campaign"


class Outcome(Enum):
    REVERTED = "reverted"
    SKIPPED = "skipped"
    CONFLICT = "conflict"
    DENIED = "denied"


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 70}),
        help_text="Recorded on every reverted invocation and shown to the table.",
    )


class RevertForm(ReasonForm):
    cascade = forms.BooleanField(
        required=False,
        label="Cascade",
        help_text="Also revert, newest first, the later invocations that depend on this.",
    )


def can_read_log(user: Any) -> bool:
    return reads_every_campaign(user)


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


@dataclass(frozen=True)
class Reverting:
    """What differs between reverting an invocation and undoing a turn in the admin; the page,
    the plan and the outcomes are shared."""

    verb: str  # "revert" | "undo": the page's URL and name, the change page's link
    target: str  # the services' keyword for it: "invocation_id" | "turn_id"
    recorded_as: Callable[[Any], str]  # its name in the security log, as the service names it
    service: Callable[..., Any]  # invocation_revert | turn_undo
    name: Callable[[Any], str]  # "#3 move" | "turn 12", in titles
    summary: Callable[[Any], str]  # shown above the plan
    refused: Callable[[Any], SafeString]  # how the message of a refusal begins
    denied: str  # why the plan is refused
    stands: Callable[[Any], bool]  # it can still be reverted
    actor_id: Callable[[Any], Any]  # whose call or turn it is, for the policy
    report: Callable[[HttpRequest, Any, Any], Outcome]  # tells staff the service's result


def _report_invocation(request: HttpRequest, row: ToolInvocation, result: Any) -> Outcome:
    if not result.reverted:
        text = skip_text(result.skip_reason)
        messages.warning(request, format_html("{}: skipped, {}.", invocation_link(row), text))
        return Outcome.SKIPPED
    cascaded = len(result.details["cascaded"])
    also = f" together with {cascaded} later invocation(s)" if cascaded else ""
    messages.success(request, format_html("{}: reverted{}.", invocation_link(row), also))
    return Outcome.REVERTED


def _turn_name(turn: Turn) -> str:
    return f"turn {turn.pk} by {turn.actor}"


def _report_turn(request: HttpRequest, turn: Turn, result: Any) -> Outcome:
    messages.success(
        request,
        f"{capfirst(_turn_name(turn))} undone: {len(result.reverted)} invocation(s) reverted.",
    )
    rows = _rows_by_id([skip["id"] for skip in result.skipped])
    for skip in result.skipped:
        text = skip_text(skip["skip_reason"])
        messages.info(
            request, format_html("{}: skipped, {}.", invocation_link(rows[skip["id"]]), text)
        )
    return Outcome.REVERTED if result.reverted else Outcome.SKIPPED


INVOCATION = Reverting(
    verb="revert",
    target="invocation_id",
    recorded_as=lambda row: str(row.pk),
    service=invocation_revert,
    name=label,
    summary=summary,
    refused=lambda row: format_html("{}: not reverted, ", invocation_link(row)),
    denied=DENIED,
    stands=lambda row: skip_reason(row) is None,
    actor_id=lambda row: row.user_id,
    report=_report_invocation,
)
TURN = Reverting(
    verb="undo",
    target="turn_id",
    recorded_as=lambda turn: f"turn:{turn.pk}",
    service=turn_undo,
    name=_turn_name,
    summary=lambda turn: "",
    refused=lambda turn: format_html("{} not undone: ", capfirst(_turn_name(turn))),
    denied="you may not undo it",
    stands=lambda turn: turn.reverted_at is None,
    actor_id=lambda turn: turn.actor_id,
    report=_report_turn,
)


def revert_and_report(
    request: HttpRequest,
    target: ToolInvocation | Turn,
    *,
    reason: str,
    cascade: bool,
    cascade_url: str,
) -> Outcome:
    """Revert an invocation through `invocation_revert`, or undo a turn through `turn_undo`,
    and tell staff how it went: reverted, skipped (with the reason), a conflict naming the later
    invocations, or denied (and recorded)."""
    kind = INVOCATION if isinstance(target, ToolInvocation) else TURN
    try:
        with service_refusals(request, target, target=kind.recorded_as(target), action=kind.verb):
            result = kind.service(
                campaign_id=target.campaign_id,
                user=request.user,
                reason=reason,
                cascade=cascade,
                ip=client_ip(request),
                **{kind.target: target.pk},
            )
    except Conflict as conflict:
        text = conflict_text(conflict.conflicts, cascade_url)
        messages.error(request, format_html("{}{}", kind.refused(target), text))
        return Outcome.CONFLICT
    except Forbidden:
        messages.error(request, format_html("{}{}.", kind.refused(target), DENIED))
        return Outcome.DENIED
    return kind.report(request, target, result)


def plan_for(request: HttpRequest, **target: Any) -> dict[str, Any]:
    """`invocation_revert_plan`, or `turn_undo_plan` given a `turn_id`, ready for the
    confirmation page: each invocation and conflict linked, each diff value as JSON. Raises
    what the service raises."""
    plan_of = turn_undo_plan if "turn_id" in target else invocation_revert_plan
    plan = plan_of(user=request.user, ip=client_ip(request), **target)
    rows = _rows_by_id([item["id"] for item in plan["invocations"]] + plan["conflicts"])
    names = creature_names_in(campaign_ids=[target["campaign_id"]])
    return {
        "invocations": [
            {
                **item,
                "summary": Names(names).in_text(item["summary"]),
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


class ReadOnlyMixin:
    """Nothing is added, changed or deleted here, superusers included: the log is append-only
    and the world is written by services. A page that edits a few fields of a row (a campaign's
    name) sets `changeable`; it still neither adds nor deletes."""

    changeable = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.changeable and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except PermissionDenied:
            self._write_refused(request, object_id, "change" if object_id else "add")
            raise

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict | None = None
    ) -> HttpResponse:
        try:
            return super().delete_view(request, object_id, extra_context)
        except PermissionDenied:
            self._write_refused(request, object_id, "delete")
            raise

    def _write_refused(self, request: HttpRequest, object_id: str | None, action: str) -> None:
        """Django refused a write (a POST, answered 403): record it. Reading is no write."""
        if request.method != "POST":
            return
        obj = self.get_object(request, unquote(object_id)) if object_id else None
        detail = NO_PERMISSION.format(action=action, name=self.opts.verbose_name)
        target = f"{self.opts.model_name}:{object_id or 'new'}"
        admin_denial(request, obj, target=target, detail=detail)


class RevertPageMixin:
    """The Revert page of an invocation and the Undo page of a turn, in one shape: the change
    page links to it while the target stands and the policy lets this user revert it; GET shows
    the plan and asks for a reason; POST reverts through the service and tells how it went."""

    reverting: Reverting

    def get_urls(self) -> list:
        view = self.admin_site.admin_view(self.revert_view)
        route = f"<path:object_id>/{self.reverting.verb}/"
        return [path(route, view, name=self._url_name(self.reverting.verb)), *super().get_urls()]

    def revert_url(self, obj: Any) -> str:
        return reverse(f"admin:{self._url_name(self.reverting.verb)}", args=[obj.pk])

    def render_change_form(
        self, request: HttpRequest, context: dict, *args: Any, obj: Any = None, **kwargs: Any
    ) -> HttpResponse:
        if obj is not None and self._offers_revert(request, obj):
            context[f"{self.reverting.verb}_url"] = self.revert_url(obj)
        return super().render_change_form(request, context, *args, obj=obj, **kwargs)

    def revert_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_view_permission(request, obj):
            name = self.opts.verbose_name
            detail = NO_PERMISSION.format(action=self.reverting.verb, name=name)
            admin_denial(request, obj, target=self.reverting.recorded_as(obj), detail=detail)
            raise PermissionDenied
        change_url = reverse(f"admin:{self._url_name('change')}", args=[obj.pk])
        cascade_url = self.revert_url(obj) + "?cascade=1"
        form = RevertForm(request.POST or None, initial={"cascade": "cascade" in request.GET})
        if request.method == "POST" and form.is_valid():
            outcome = revert_and_report(request, obj, cascade_url=cascade_url, **form.cleaned_data)
            if outcome is not Outcome.CONFLICT:
                return redirect(change_url)
        return self._confirmation_page(request, obj, form, cancel_url=change_url)

    def _confirmation_page(
        self, request: HttpRequest, obj: Any, form: RevertForm, *, cancel_url: str
    ) -> HttpResponse:
        """The plan and the reason to give, before anything is reverted."""
        kind = self.reverting
        cascade = bool(form["cascade"].value())
        try:
            with service_refusals(request, obj, target=kind.recorded_as(obj), action=kind.verb):
                plan = plan_for(
                    request, campaign_id=obj.campaign_id, cascade=cascade, **{kind.target: obj.pk}
                )
        except Forbidden:
            self.message_user(request, f"{capfirst(kind.name(obj))}: {kind.denied}.", level="error")
            return redirect(cancel_url)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"{kind.verb.capitalize()} {kind.name(obj)}?",
            "object": obj,
            "form": form,
            "media": self.media + form.media,
            "plan": plan,
            "summary": kind.summary(obj),
            "cascade_url": self.revert_url(obj) + "?cascade=1",
            "cancel_url": cancel_url,
        }
        return TemplateResponse(request, "admin/audit/revert_confirmation.html", context)

    def _offers_revert(self, request: HttpRequest, obj: Any) -> bool:
        """While the target stands and the policy lets this user revert it."""
        kind = self.reverting
        if not kind.stands(obj):
            return False
        rights = viewer_rights(campaign=obj.campaign, user=request.user)
        return rights.reverts(kind.actor_id(obj))

    def _url_name(self, view: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{view}"


def _rows_by_id(ids: list[str]) -> dict[str, ToolInvocation]:
    return {str(row.pk): row for row in ToolInvocation.objects.filter(pk__in=ids)}
