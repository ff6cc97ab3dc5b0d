"""Human in the loop (docs/architecture.md#human-in-the-loop): approve, reject or expire a tool call
the dispatch held back.

One service for every surface (REST, the campaign page, the admin) and the expiry job. Each
answer is one durable transaction under the campaign lock (the lock dispatch and undo take), so
two approvers, an approver and the expiry, or an approver and an undo of the turn serialise:
the first answer stands and the others find the call answered (Conflict). Every status change
of the held row is a chained transition (`audit.chain.transitions_append`): `awaiting_approval
→ pending` (approved: who, when) then the call runs as a new row at the log's tip; or
`awaiting_approval → rejected | expired`, which changes nothing in the world.

The GM turn the call paused hears of the outcome through `approval_resolved`, sent in the same
transaction: the GM layer (above this one) resumes the turn on any worker, and the model reads
the outcome as the tool result.
"""

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from ai_tools import registry
from audit.chain import transitions_append
from audit.models import ApprovalAnswer, ToolInvocation
from audit.permissions import authorize_approval, authorize_objection, may_approve
from audit.selectors import held_call_affected_players, invocation_get
from audit.services.common import ToolFailed, call_held, campaign_lock
from audit.services.dispatch import approval_deadline, approved_call_run, held_call_context
from audit.services.preview import call_preview, preview_is_stale
from campaigns.events import ApprovalResolved
from campaigns.models import Campaign, Source
from campaigns.realtime import broadcast_on_commit, event
from campaigns.security import recording_denials
from campaigns.selectors import campaign_get_visible
from core.errors import Conflict, InvalidInput, StalePreview

Status = ToolInvocation.Status
# Sent in the answering transaction, under the campaign lock: (sender=ToolInvocation,
# invocation=the held row, status=approved|rejected|expired). The GM layer resumes the turn.
approval_resolved = Signal()


@dataclass
class ApprovalResult:
    status: ApprovalAnswer
    invocation: ToolInvocation  # the held row
    ran: ToolInvocation | None = None  # approved: the row the call ran as


def invocation_approve(
    *, campaign_id: Any, invocation_id: Any, user: Any, ip: str | None = None
) -> ApprovalResult:
    """Run a held call now, through the dispatch, against the world as it is. If what it
    writes changed since its preview, nothing runs: the row keeps waiting with a fresh preview
    and StalePreview (409) carries it, so the approver decides on what will really happen."""
    with recording_denials(user=user, ip=ip):
        stale = None
        with transaction.atomic(durable=True):
            campaign, row = _lock_held(campaign_id, invocation_id, user, reject=False)
            fresh = _fresh_preview(campaign, row)
            if preview_is_stale(row.preview, fresh):
                row.preview = fresh
                row.save(update_fields=["preview"])
                stale = fresh
            else:
                _transition(campaign, row, Status.PENDING, by=user, reason="approved")
                ran = approved_call_run(row, campaign)
                _resolved(row, ApprovalAnswer.APPROVED, by=user, ran=ran)
        if stale is not None:
            raise StalePreview(
                "What this call would change has changed since its preview; here is the "
                "fresh one. Approve again to run it as it stands now.",
                preview=stale,
            )
    return ApprovalResult(ApprovalAnswer.APPROVED, row, ran)


def invocation_reject(
    *, campaign_id: Any, invocation_id: Any, user: Any, reason: str = "", ip: str | None = None
) -> ApprovalResult:
    """Refuse a held call (an approver), or withdraw it (the turn's player). Nothing in the
    world changes; the GM reads the refusal, with the reason, as the call's error."""
    with recording_denials(user=user, ip=ip), transaction.atomic(durable=True):
        campaign, row = _lock_held(campaign_id, invocation_id, user, reject=True)
        why = _refusal_words(campaign, row, user=user, reason=reason)
        _transition(campaign, row, Status.REJECTED, by=user, reason=why)
        _resolved(row, ApprovalAnswer.REJECTED, by=user, reason=why)
    return ApprovalResult(ApprovalAnswer.REJECTED, row)


def _refusal_words(campaign: Campaign, row: ToolInvocation, *, user: Any, reason: str) -> str:
    """What the table and the GM read of a refusal, with who and why: an approver rejects the
    call; the turn's own player, who may not approve it, withdraws it."""
    said = f": {reason.strip()}" if reason.strip() else "."
    withdrawn = not may_approve(user=user, campaign=campaign, actor_id=row.user_id)
    return f"{user.get_username()} {'withdrew' if withdrawn else 'rejected'} this call{said}"


def invocation_object(
    *, campaign_id: Any, invocation_id: Any, user: Any, reason: str, ip: str | None = None
) -> ApprovalResult:
    """The affected player's voice: the player of a character a held critical call would change
    objects to it, with their reason, and that rejects it (nothing in the world changes; the GM
    reads the objection as the call's error). Letting a call run stays with the approvers.
    Under the campaign lock like every answer, so an objection racing an approval resolves
    once: whichever comes second finds the call answered (Conflict)."""
    said = reason.strip()
    if not said:
        raise InvalidInput("Say why you object: the table and the GM read your reason.")
    with recording_denials(user=user, ip=ip), transaction.atomic(durable=True):
        campaign = campaign_get_visible(campaign_id=campaign_id, user=user, lock=True)
        row = invocation_get(campaign=campaign, invocation_id=invocation_id, lock=True)
        authorize_objection(
            user=user,
            campaign=campaign,
            affected_player_ids=held_call_affected_players(campaign=campaign, row=row),
            target=str(row.pk),
        )
        if row.status != Status.AWAITING_APPROVAL:
            raise Conflict(f"This call is not waiting for approval: it is {row.status}.")
        why = f"{user.get_username()} objected to this call: {said}"
        _transition(campaign, row, Status.REJECTED, by=user, reason=why)
        _resolved(row, ApprovalAnswer.REJECTED, by=user, reason=why)
    return ApprovalResult(ApprovalAnswer.REJECTED, row)


def invocation_expire(*, invocation_id: Any) -> str:
    """The expiry job's work: a call still waiting when its campaign's approval timeout has
    passed expires; one answered meanwhile stays as it was answered, and one whose deadline
    moved later (the owner lengthened the timeout) is scheduled again for it. Returns what
    happened, for the job's record."""
    campaign_id = (
        ToolInvocation.objects.filter(pk=invocation_id)
        .values_list("campaign_id", flat=True)
        .first()
    )
    if campaign_id is None:
        return "gone"
    with transaction.atomic(durable=True):
        campaign = campaign_lock(campaign_id)
        row = ToolInvocation.objects.select_for_update().get(pk=invocation_id)
        if row.status != Status.AWAITING_APPROVAL:
            return f"already {row.status}"
        deadline = approval_deadline(row, campaign)
        if timezone.now() < deadline:
            # The owner lengthened the timeout while it waited: the job comes back then.
            call_held.send(sender=ToolInvocation, row=row, expires_at=deadline)
            return f"not due until {deadline.isoformat()}"
        minutes = round(campaign.approval_timeout / 60)
        why = f"No one approved this call within {minutes} minute(s); it expired."
        _transition(campaign, row, Status.EXPIRED, by=None, reason=why)
        _resolved(row, ApprovalAnswer.EXPIRED, by=None, reason=why)
    return ApprovalAnswer.EXPIRED


def held_calls_withdraw(*, campaign: Campaign, turn: Any, by: Any, reason: str) -> list[str]:
    """Reject every call of `turn` still waiting (its turn is being cancelled or rewound): no
    call is left to be approved onto it. Assumes the campaign lock, in the caller's
    transaction."""
    rows = ToolInvocation.objects.select_for_update().filter(
        campaign_id=campaign.pk, turn_id=turn.pk, status=Status.AWAITING_APPROVAL
    )
    return held_calls_reject(campaign=campaign, rows=rows, by=by, reason=reason)


def held_calls_reject(
    *, campaign: Campaign, rows: list[ToolInvocation], by: Any, reason: str
) -> list[str]:
    """Reject these held calls, read locked by the caller (an undo reads all its turn's calls
    at once). Each row's status is `rejected` when it returns. Assumes the campaign lock."""
    for row in rows:
        _transition(campaign, row, Status.REJECTED, by=by, reason=reason)
        _resolved(row, ApprovalAnswer.REJECTED, by=by, reason=reason)
    return [str(row.pk) for row in rows]


def approval_answer(row: ToolInvocation) -> dict[str, Any] | None:
    """Who answered a held call, how and when: {status, by, at, reason, ran_as}; None while it
    waits (or for a call that was never held). From its chained transition, the record."""
    link = (
        row.transitions.filter(from_status=Status.AWAITING_APPROVAL)
        .select_related("by")
        .order_by("ordinal")
        .first()
    )
    if link is None:
        return None
    ran = row.approved_runs.values_list("pk", "status").first()
    return {
        "status": (ApprovalAnswer.APPROVED if link.to_status == Status.PENDING else link.to_status),
        "by": link.by.get_username() if link.by_id else None,
        "at": link.at.isoformat(),
        "reason": link.reason,
        "ran_as": str(ran[0]) if ran else None,
        "ran_status": ran[1] if ran else None,
    }


def _lock_held(
    campaign_id: Any, invocation_id: Any, user: Any, *, reject: bool
) -> tuple[Campaign, ToolInvocation]:
    """The campaign (locked; NotFound for a non-member) and the held row (locked), once the
    user may answer it (Forbidden otherwise) and it still waits (Conflict otherwise)."""
    campaign = campaign_get_visible(campaign_id=campaign_id, user=user, lock=True)
    row = invocation_get(campaign=campaign, invocation_id=invocation_id, lock=True)
    authorize_approval(
        user=user, campaign=campaign, actor_id=row.user_id, target=str(row.pk), reject=reject
    )
    if row.status != Status.AWAITING_APPROVAL:
        raise Conflict(f"This call is not waiting for approval: it is {row.status}.")
    return campaign, row


def _fresh_preview(campaign: Campaign, row: ToolInvocation) -> dict[str, Any]:
    """The preview as of now. A call its tool would now refuse has nothing to preview: the
    approval goes ahead and the run records the refusal as a `failed` row."""
    tool = registry.write_tool(row.tool_name)
    ctx = held_call_context(row, campaign)
    reason = (row.preview or {}).get("reason", "")
    try:
        return call_preview(tool, ctx, row.input, reason=reason)
    except ToolFailed:
        return row.preview or {}


def _transition(campaign: Campaign, row: ToolInvocation, to: str, *, by: Any, reason: str) -> None:
    before, row.status = row.status, to
    row.save(update_fields=["status"])
    links = transitions_append(
        campaign_id=campaign.pk, changes=[(row, before)], by=by, reason=reason, at=timezone.now()
    )
    campaign.log_head = links[-1].row_hash  # the approved run links to this transition


def _resolved(
    row: ToolInvocation, status: ApprovalAnswer, *, by: Any, reason: str = "", ran: Any = None
) -> None:
    """`approval_resolved` for the table (its number reserved now, sent after commit), and the
    signal that resumes the turn."""
    resolved = ApprovalResolved(
        invocation=str(row.pk),
        tool_name=row.tool_name,
        status=status,
        by=by.get_username() if by is not None else None,
        reason=reason,
        ran_as=str(ran.pk) if ran is not None else None,
        ran_status=ran.status if ran is not None else None,
        result=ran.result if ran is not None else None,
        error=ran.error if ran is not None and ran.status == Status.FAILED else "",
    )
    broadcast_on_commit(
        row.campaign_id,
        [
            event(
                resolved,
                source=Source.USER if by is not None else Source.SYSTEM,
                turn=row.turn_id,
                invocation=row.pk,
            )
        ],
    )
    approval_resolved.send(sender=ToolInvocation, invocation=row, status=status)
