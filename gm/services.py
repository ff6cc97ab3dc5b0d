"""What people do with GM turns: post one for the GM, run one here, cancel one, retry one. Who
may is decided here (a member posts; the actor, or whoever may revert it, cancels and retries),
and a refusal is recorded (from the caller's `ip`)."""

from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.permissions import authorize_revert
from audit.services.approval import held_calls_withdraw
from campaigns.models import Campaign, ChatMessage, Turn
from campaigns.permissions import require_member, require_owner
from campaigns.security import recording_denials
from campaigns.selectors import campaign_get_visible, turn_get
from campaigns.services import turn_create
from core.errors import Conflict, InvalidInput
from gm.base import GMProvider
from gm.providers import Seat, seats
from gm.runner import claim_run, turn_close
from gm.tasks import turn_claim, turn_enqueue, turn_enqueue_next
from gm.transcript import transcript_text

STOPPABLE = (Turn.Status.QUEUED, Turn.Status.RUNNING, Turn.Status.AWAITING_APPROVAL)


def turn_submit(
    *, campaign: Campaign, actor: Any, message: str, run_gm: bool = True, ip: str | None = None
) -> Turn:
    """A member's message as a new turn (`require_member`: staff who police the table do not
    play at it; a refusal is recorded from `ip`), queued for the GM: a worker answers it
    (docs/architecture.md#durable-gm-turns), and nothing here waits for the model. Without
    `run_gm` the turn stays open for the member's own agent. Durable, so the turn and its task
    are committed when this returns."""
    with recording_denials(user=actor, ip=ip):
        require_member(campaign=campaign, user=actor, action="turn_create")
    with transaction.atomic(durable=True):
        if not run_gm:
            return turn_create(campaign=campaign, actor=actor, message=message)
        return _queue(campaign=campaign, actor=actor, message=message)


def _queue(*, campaign: Campaign, actor: Any, message: str, retry_of: Turn | None = None) -> Turn:
    turn = turn_create(
        campaign=campaign, actor=actor, message=message, queued=True, retry_of=retry_of
    )
    turn_enqueue(turn)
    return turn


def gm_turn_run(*, turn: Turn, provider: GMProvider | None = None) -> Turn:
    """Run the GM on a queued turn in this process, now (a worker runs `gm.tasks.run_turn`).
    Raises Conflict unless the turn is its campaign's next (queued, oldest, none running). The
    claim is a durable transaction, so a call nested in a caller's transaction raises
    RuntimeError before anything runs."""
    claim = turn_claim(campaign_id=turn.campaign_id, turn_id=turn.pk)
    if claim is None:
        raise Conflict(
            "The GM is not waiting to answer this turn: it answered it, is answering this or an "
            "earlier turn, or the turn was cancelled or undone."
        )
    ended = claim_run(claim, provider)
    turn_enqueue_next(campaign_id=turn.campaign_id)
    return ended


def turn_cancel(*, campaign_id: Any, turn_id: Any, user: Any, ip: str | None = None) -> Turn:
    """Stop the GM on a turn (its actor, or whoever may revert it). A queued turn is cancelled
    at once; a running one stops within about a second (its runner's stop watch hangs up the
    model's stream, docs/architecture.md#durable-gm-turns), its committed calls staying
    undoable. A turn that has ended cannot be cancelled (Conflict)."""
    with recording_denials(user=user, ip=ip), transaction.atomic(durable=True):
        campaign = campaign_get_visible(campaign_id=campaign_id, user=user, lock=True)
        turn = turn_get(campaign=campaign, turn_id=turn_id, lock=True)
        authorize_revert(
            user=user, campaign=campaign, actor_id=turn.actor_id, target=f"turn:{turn.pk}"
        )
        if turn.status not in STOPPABLE:
            raise Conflict(_not_stoppable(turn))
        if turn.cancel_requested_at is None:
            turn.cancel_requested_at, turn.cancel_requested_by = timezone.now(), user
            turn.save(update_fields=["cancel_requested_at", "cancel_requested_by"])
        if turn.status == Turn.Status.AWAITING_APPROVAL:  # its held calls go; it queues to end
            who = user.get_username()
            held_calls_withdraw(
                campaign=campaign, turn=turn, by=user, reason=f"{who} cancelled this turn."
            )
            turn.refresh_from_db()
        if turn.status == Turn.Status.QUEUED:  # perhaps waiting to resume: keep what it said
            turn_close(turn, status=Turn.Status.CANCELLED, text=transcript_text(turn=turn))
    turn.refresh_from_db()
    return turn


def _not_stoppable(turn: Turn) -> str:
    if turn.status == Turn.Status.OPEN:
        return "The GM was not asked to answer this turn, so there is nothing to cancel."
    return f"This turn has already ended ({turn.status}); there is nothing left to cancel."


def turn_retry(*, campaign_id: Any, turn_id: Any, user: Any, ip: str | None = None) -> Turn:
    """Run the GM afresh on an undone GM turn's player message (its actor, or whoever may
    revert it): a new queued turn of the same actor and message. A turn is retried once."""
    with recording_denials(user=user, ip=ip), transaction.atomic(durable=True):
        campaign = campaign_get_visible(campaign_id=campaign_id, user=user, lock=True)
        turn = turn_get(campaign=campaign, turn_id=turn_id, lock=True)
        authorize_revert(
            user=user, campaign=campaign, actor_id=turn.actor_id, target=f"turn:{turn.pk}"
        )
        if turn.reverted_at is None:
            raise Conflict("Only an undone turn can be retried: undo this turn first.")
        if turn.status == Turn.Status.OPEN:
            raise Conflict(
                "The GM was not asked to answer this turn, so there is nothing to retry."
            )
        if Turn.objects.filter(retry_of=turn).exists():
            raise Conflict("This turn has already been retried.")
        if Turn.objects.filter(redo_of=turn).exists():
            raise Conflict("This turn was redone: its redo stands in its place.")
        said = turn.messages.filter(role=ChatMessage.Role.PLAYER).order_by("pk").first()
        return _queue(
            campaign=campaign,
            actor=turn.actor,
            message=said.content if said else "",
            retry_of=turn,
        )


def campaign_gm_set(*, campaign: Campaign, by: Any, provider: str, ip: str | None = None) -> Seat:
    """The owner seats another GM at the campaign's table: one of the seats this deployment has
    configured (`gm.providers.seats`). Turns already queued keep theirs only if they started;
    every turn claimed from now on is answered by the new GM. Only the seat's name is stored."""
    with recording_denials(user=by, ip=ip):
        require_owner(campaign=campaign, user=by, action="campaign_gm_set")
    offered = seats()
    if provider not in offered:
        raise InvalidInput(
            f"provider must be one of this server's GMs ({', '.join(offered)}); got {provider!r}."
        )
    with transaction.atomic(durable=True):
        Campaign.objects.select_for_update().filter(pk=campaign.pk).update(gm_provider=provider)
    campaign.gm_provider = provider
    return offered[provider]
