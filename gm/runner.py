"""Running the GM on a turn a worker has claimed, and ending turns.

The runner holds the turn's lease for as long as it runs (a heartbeat renews it). Whatever the
provider does, the turn ends `completed`, `failed` with a system message saying why, or
`cancelled` (someone cancelled it, or it was undone, while the GM spoke); tool calls already
committed stay in the log, undoable. The one exception is a runner that lost its lease: the turn
went on elsewhere, and this runner leaves without writing anything.
"""

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce

from audit.models import ToolInvocation
from campaigns.events import GMTurnCompleted, GMTurnStarted
from campaigns.models import ChatMessage, Source, Turn
from campaigns.realtime import broadcast_on_commit, event
from campaigns.services import message_post
from core.faults import is_unavailable
from gm.base import GMError, TurnStopped
from gm.context import gm_context
from gm.lease import Heartbeat, lease_check, lease_hold
from gm.providers import provider_for
from gm.session import TurnSession
from gm.transcript import transcript_rounds, transcript_state

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    """A turn a runner holds the lease on, and which attempt at the turn this is; the seat of
    the GM that answers it (the campaign's, blank: the deployment's default) and, on the first
    attempt, the state its GM decides from (stored by the claim; a later one reads it back)."""

    turn: Turn
    owner: str
    attempt: int
    seat: str
    state: dict[str, Any] | None = None


def claim_run(claim: Claim, provider: Any = None) -> Turn:
    """Run the GM on a claimed turn until it ends (or this runner loses its lease)."""
    turn = claim.turn
    session: TurnSession | None = None
    model = ""
    with Heartbeat(turn_id=turn.pk, owner=claim.owner) as heartbeat:
        try:
            provider = provider or provider_for(claim.seat)
            model = provider.model
            session = _session(claim, heartbeat, first=True)
            actor = turn.actor.get_username()
            session.publish(GMTurnStarted(actor=actor, model=model, attempt=claim.attempt))
            while not _played(provider, session, claim):
                session = _session(claim, heartbeat)  # answered at once: play on from the top
            if not session.paused:
                _end(claim, Turn.Status.COMPLETED, session, model=model)
        except TurnStopped as stop:
            if stop.why == TurnStopped.LOST:
                logger.warning("GM turn %s: lease lost by %s, stopping", turn.pk, claim.owner)
            else:
                _end(claim, Turn.Status.CANCELLED, session, model=model)
        except Exception as exc:
            reason = _failure_reason(turn, exc)
            _end(claim, Turn.Status.FAILED, session, model=model, reason=reason)
    turn.refresh_from_db()
    return turn


def _played(provider: Any, session: TurnSession, claim: Claim) -> bool:
    """Play the turn: True once the provider finished or the turn paused for an approval
    (then `session.paused` is set and the worker is free to go); False if a call it paused on
    was answered before the turn could pause, so it must be played on."""
    try:
        provider.run(session)
    except TurnStopped as stop:
        if stop.why != TurnStopped.PAUSED:
            raise
        session.paused = turn_pause(claim.turn, claim.owner, session)
        return session.paused
    return True


def turn_pause(turn: Turn, owner: str, session: TurnSession) -> bool:
    """Pause the turn in the database while a call of it waits for approval: status
    `awaiting_approval`, lease released, so no worker holds it (the call's answer queues it
    again, `gm.tasks.turn_resume`). False if no call of it waits any more (answered between
    the dispatch and now): the runner plays on. Under the campaign lock, which the answer
    takes too, so one of the two sees the other."""
    with transaction.atomic(durable=True):
        lease_check(turn, owner)
        waiting = ToolInvocation.objects.filter(
            campaign_id=turn.campaign_id, turn=turn, status=ToolInvocation.Status.AWAITING_APPROVAL
        ).exists()
        if waiting:
            session.flush()
            turn_figures(turn, session)
            Turn.objects.filter(pk=turn.pk).update(
                status=Turn.Status.AWAITING_APPROVAL, lease_owner="", lease_expires_at=None
            )
    return waiting


def _session(claim: Claim, heartbeat: Heartbeat, *, first: bool = False) -> TurnSession:
    """The turn's session, from its transcript; the `first` of a first attempt's has no round
    to read yet (rounds are stored under the lease, and no runner held it before this claim)."""
    turn = claim.turn
    opening = claim.state if claim.state is not None else transcript_state(turn=turn)
    fresh = first and claim.attempt == 1
    return TurnSession(
        turn=turn,
        context=gm_context(turn=turn, state=opening),
        owner=claim.owner,
        attempt=claim.attempt,
        rounds=[] if fresh else transcript_rounds(turn=turn),
        watch=heartbeat,
    )


def _failure_reason(turn: Turn, exc: Exception) -> str:
    """What the table reads. Provider errors are expected (an overloaded API), and so are
    outages of our own database or channel layer; anything else is a bug in our code and logged
    with its traceback."""
    if isinstance(exc, GMError):
        logger.warning("GM turn %s failed: %s", turn.pk, exc)
        reason = str(exc).strip()
        return reason if reason.endswith((".", "!", "?")) else reason + "."
    if is_unavailable(exc):  # an outage is not our bug: say so, and that a retry may work
        logger.warning("GM turn %s stopped by an outage: %s: %s", turn.pk, type(exc).__name__, exc)
        return "the game's database or live feed was unavailable; try again in a moment."
    logger.exception("GM turn %s crashed", turn.pk)
    return f"the GM ran into an internal error ({type(exc).__name__})."


def _end(
    claim: Claim, status: str, session: TurnSession | None, *, model: str, reason: str = ""
) -> None:
    """End the turn if this runner still holds it; its narration so far becomes its message."""
    try:
        with transaction.atomic(durable=True):
            current = lease_hold(claim.turn, claim.owner)
            figures = None
            if session is not None:
                session.flush()
                figures = _figures(session, model=model)
            text = session.text if session is not None else ""
            turn_close(
                current, status=status, model=model, text=text, reason=reason, figures=figures
            )
    except TurnStopped:
        logger.warning("GM turn %s ended elsewhere; %s writes nothing", claim.turn.pk, claim.owner)


def turn_figures(turn: Turn, session: TurnSession, *, model: str = "") -> None:
    """Add this attempt's figures to the turn's (`_figures`)."""
    Turn.objects.filter(pk=turn.pk).update(**_figures(session, model=model))


def _figures(session: TurnSession, *, model: str) -> dict[str, Any]:
    """This attempt's figures, as updates of the turn's: the model that answered (as its log
    rows name it: the last stored round's, else the provider's), the GM's time, the first
    word's delay if none was recorded before, and the tokens its new rounds cost."""
    answered = session.rounds[-1].model if session.rounds else model
    figures: dict[str, Any] = {
        "answer_ms": Coalesce(F("answer_ms"), 0) + session.elapsed_ms(),
    }
    if answered:
        figures["gm_model"] = answered[:120]
    if session.first_word_ms is not None:
        figures["first_word_ms"] = Coalesce(F("first_word_ms"), session.first_word_ms)
    if session.tokens is not None:
        figures["tokens_in"] = Coalesce(F("tokens_in"), 0) + session.tokens[0]
        figures["tokens_out"] = Coalesce(F("tokens_out"), 0) + session.tokens[1]
    return figures


def turn_close(
    turn: Turn,
    *,
    status: str,
    model: str = "",
    text: str = "",
    reason: str = "",
    figures: dict[str, Any] | None = None,
) -> None:
    """End a turn, under its locks: the GM's words so far as its message (on record only, if
    the turn was undone), a system note unless it completed, its status (with its runner's
    `figures`, `_figures`, in the same write), and `gm_turn_completed` for the table."""
    calls = _calls(turn)
    message = None
    if turn.reverted_at is not None:
        if text:  # undone while the GM was speaking: keep the words on record, not in the feed
            ChatMessage.objects.create(
                campaign_id=turn.campaign_id,
                turn=turn,
                role=ChatMessage.Role.GM,
                source=Source.AI_TOOL_EXECUTION,
                content=text,
                reverted=True,
            )
    else:
        if text:
            message = _post(turn, ChatMessage.Role.GM, text)
        note = _note(turn, status, reason=reason, unfinished=bool(text), has_calls=bool(calls))
        if note:
            message = _post(turn, ChatMessage.Role.SYSTEM, note)
    Turn.objects.filter(pk=turn.pk).update(
        status=status, lease_owner="", lease_expires_at=None, **(figures or {})
    )
    _completed_event(turn, status=status, model=model, message=message, error=reason, calls=calls)


def _calls(turn: Turn) -> list[str]:
    """The ids of the turn's log rows, in the log's order."""
    rows = ToolInvocation.objects.filter(campaign_id=turn.campaign_id, turn=turn)
    return [str(pk) for pk in rows.order_by("sequence").values_list("pk", flat=True)]


def _post(turn: Turn, role: str, content: str) -> ChatMessage:
    source = Source.AI_TOOL_EXECUTION if role == ChatMessage.Role.GM else Source.SYSTEM
    return message_post(turn=turn, author=None, role=role, source=source, content=content)


def _note(turn: Turn, status: str, *, reason: str, unfinished: bool, has_calls: bool) -> str:
    if status == Turn.Status.COMPLETED:
        return ""
    if status == Turn.Status.FAILED:
        note = f"The GM could not finish this turn: {reason}"
    elif turn.status == Turn.Status.QUEUED and turn.attempts == 0:
        return f"{_who(turn)} cancelled this turn before the GM answered it."
    else:
        note = f"{_who(turn)} stopped the GM on this turn."
    if unfinished:
        note += " Its narration above is unfinished."
    if has_calls:
        note += " Its tool calls so far are in the log and can be undone."
    return note


def _who(turn: Turn) -> str:
    by = turn.cancel_requested_by
    return by.get_username() if by is not None else "Someone"


def _completed_event(
    turn: Turn,
    *,
    status: str,
    model: str,
    message: ChatMessage | None,
    error: str,
    calls: list[str],
) -> None:
    by = turn.cancel_requested_by if status == Turn.Status.CANCELLED else None
    completed = GMTurnCompleted(
        status=status,
        model=model,
        message=message.pk if message else None,
        content=message.content if message else "",
        invocations=calls,
        error=error,
        cancelled_by=by.get_username() if by is not None else None,
    )
    source = Source.AI_TOOL_EXECUTION if status == Turn.Status.COMPLETED else Source.SYSTEM
    broadcast_on_commit(turn.campaign_id, [event(completed, source=source, turn=turn.pk)])
