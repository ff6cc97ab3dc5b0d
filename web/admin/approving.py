"""The admin's approval queue: calls held for approval, approved or rejected through the same
service as the API and the page (`audit.services.approval`), each row's outcome told to staff
in words. Who may answer is the one rule, `audit.permissions.may_approve`, applied by the
service (a denial is a security event there, or in `web.admin.refusals` for a campaign the staff
member may not see)."""

from typing import Any

from django.contrib import messages
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from audit.models import ToolInvocation
from audit.services.approval import approval_answer, invocation_approve, invocation_reject
from core.api.base import client_ip
from core.errors import Conflict, Forbidden, StalePreview
from web.admin.display import compact_json, invocation_link
from web.admin.refusals import service_refusals

Status = ToolInvocation.Status


def answer_and_report(request: HttpRequest, row: ToolInvocation, *, approve: bool) -> str:
    """Approve or reject one held call as `request.user` and say how it went: approved (and
    how the call ran), rejected, its preview stale (it keeps waiting, with the fresh one),
    already answered, or denied. Returns the outcome's name."""
    service = invocation_approve if approve else invocation_reject
    action, verb = ("approve", "approved") if approve else ("reject", "rejected")
    try:
        with service_refusals(request, row, target=str(row.pk), action=action):
            outcome = service(
                campaign_id=row.campaign_id,
                invocation_id=row.pk,
                user=request.user,
                ip=client_ip(request),
            )
    except StalePreview:
        text = "not approved: what it writes changed since its preview; check the fresh preview"
        messages.warning(request, format_html("{}: {}.", invocation_link(row), text))
        return "stale"
    except Conflict as refused:
        messages.warning(
            request, format_html("{}: not {}: {}", invocation_link(row), verb, refused.detail)
        )
        return "answered"
    except Forbidden:
        text = f"not {verb}: you may not answer calls in this campaign"
        messages.error(request, format_html("{}: {}.", invocation_link(row), text))
        return "denied"
    ran = outcome.ran
    if ran is None:
        messages.success(
            request, format_html("{}: rejected; nothing changed.", invocation_link(row))
        )
    elif ran.status == Status.COMMITTED:
        messages.success(
            request,
            format_html("{}: approved; it ran as {}.", invocation_link(row), invocation_link(ran)),
        )
    else:
        messages.warning(
            request,
            format_html("{}: approved, but it failed: {}", invocation_link(row), ran.error),
        )
    return verb


def preview_table(row: ToolInvocation) -> SafeString | str:
    """The held call's preview: why it waits, then before → after per field."""
    preview = row.preview
    if not isinstance(preview, dict):
        return "—"
    cells = (
        (
            f"{d['entity']} {d['id']}",
            d["field"],
            compact_json(d["before"]),
            compact_json(d["after"]),
        )
        for d in preview.get("diff", [])
    )
    return format_html(
        '<p>{}</p><table class="entity-diff"><thead><tr><th>entity</th><th>field</th>'
        "<th>before</th><th>after</th></tr></thead><tbody>{}</tbody></table>",
        preview.get("reason", ""),
        format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", cells),
    )


def answer_text(row: ToolInvocation) -> str:
    """Who answered a held call, how, when and why (from its chained transition)."""
    answer = approval_answer(row) if row.preview is not None else None
    if answer is None:
        return "waiting" if row.status == Status.AWAITING_APPROVAL else "—"
    by = answer["by"] or "nobody (it expired)"
    return f"{answer['status']} by {by} at {answer['at']}: {answer['reason']}"


def approved_run(row: ToolInvocation) -> Any:
    ran = row.approved_runs.first()
    return invocation_link(ran) if ran is not None else "—"
