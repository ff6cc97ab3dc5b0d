"""Running the GM on a player's turn."""

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.services.common import campaign_lock
from campaigns.models import ChatMessage, Turn
from campaigns.realtime import EventSource, broadcast_on_commit, event
from campaigns.services import message_post
from core.errors import Conflict
from core.faults import is_unavailable
from gm.base import GMError, GMProvider
from gm.context import gm_context
from gm.providers import provider_for
from gm.session import TurnSession

logger = logging.getLogger(__name__)


def gm_turn_run(*, turn: Turn, provider: GMProvider | None = None) -> Turn:
    """Let the GM answer a player's turn: stream its narration, run its tool calls through the
    audited dispatch, store its reply.

    The turn never stays `running`: whatever the provider does, it ends `completed`, or
    `failed` with a system message saying why (tool calls already committed stay in the log,
    undoable). Raises Conflict if the turn is not open (the GM ran on it already, is running,
    or it was undone). The claim is a durable transaction, so a call nested in a caller's
    transaction raises RuntimeError before anything runs: there the narration would arrive
    only at the caller's commit, and its tool calls, each durable, could not commit at all.
    """
    with transaction.atomic(durable=True):
        turn_stale_fail(campaign_id=turn.campaign_id)
        claimed = Turn.objects.filter(
            pk=turn.pk, status=Turn.Status.OPEN, reverted_at__isnull=True
        ).update(status=Turn.Status.RUNNING)
    if not claimed:
        raise Conflict("The GM has already answered this turn, is answering it, or it was undone.")
    session: TurnSession | None = None
    model = ""
    try:
        provider = provider or provider_for()
        model = provider.model
        session = TurnSession(turn=turn, context=gm_context(turn=turn))
        actor = turn.actor.get_username()
        session.publish("gm_turn_started", {"actor": actor, "model": model})
        provider.run(session)
        _finish_completed(turn, session, model=model)
    except Exception as exc:
        _finish_failed(turn, session, model=model, reason=_failure_reason(turn, exc))
    turn.refresh_from_db()
    return turn


def turn_stale_fail(*, campaign_id: Any = None) -> list[int]:
    """Fail turns left `running` by a process that died mid-turn (the runner itself never
    leaves one): older than `GM_TURN_TIMEOUT`, well past the longest a provider may take. Runs
    before every GM turn of the campaign, and from `manage.py gm_recover_turns` for all."""
    cutoff = timezone.now() - timedelta(seconds=settings.GM_TURN_TIMEOUT)
    stale = Turn.objects.filter(status=Turn.Status.RUNNING, created_at__lt=cutoff)
    if campaign_id is not None:
        stale = stale.filter(campaign_id=campaign_id)
    failed = []
    for turn in stale.order_by("created_at"):
        _finish_failed(turn, None, model="", reason="the GM stopped answering (it was cut off).")
        failed.append(turn.pk)
    return failed


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


def _lock(turn: Turn) -> Turn:
    """Campaign first, then the turn: the lock order of undo, so a concurrent undo and the end
    of the turn serialise instead of deadlocking."""
    campaign_lock(turn.campaign_id)
    return Turn.objects.select_for_update().get(pk=turn.pk)


def _finish_completed(turn: Turn, session: TurnSession, *, model: str) -> None:
    with transaction.atomic():
        session.flush()
        current = _lock(turn)
        if current.status != Turn.Status.RUNNING:
            return  # failed by the stale-turn sweep while this slow provider was still going
        message = None
        if current.reverted_at is not None:
            # Undone while the GM was speaking: keep the words on record, not in the feed.
            if session.text:
                message = ChatMessage.objects.create(
                    campaign_id=turn.campaign_id,
                    turn=turn,
                    role=ChatMessage.Role.GM,
                    source=ChatMessage.Source.AI_TOOL_EXECUTION,
                    content=session.text,
                    reverted=True,
                )
        elif session.text:
            message = message_post(
                turn=turn,
                author=None,
                role=ChatMessage.Role.GM,
                source=ChatMessage.Source.AI_TOOL_EXECUTION,
                content=session.text,
            )
        Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.COMPLETED)
        _completed_event(turn, session, model=model, message=message, error="")


def _finish_failed(turn: Turn, session: TurnSession | None, *, model: str, reason: str) -> None:
    with transaction.atomic():
        if _lock(turn).status != Turn.Status.RUNNING:
            return  # already ended (e.g. failed by the stale-turn sweep meanwhile)
        if session is not None:
            session.flush()
            if session.text:
                message_post(
                    turn=turn,
                    author=None,
                    role=ChatMessage.Role.GM,
                    source=ChatMessage.Source.AI_TOOL_EXECUTION,
                    content=session.text,
                )
        note = f"The GM could not finish this turn: {reason}"
        if session is not None and session.text:
            note += " Its narration above is unfinished."
        if session is not None and session.invocations:
            note += " Its tool calls so far are in the log and can be undone."
        message = message_post(
            turn=turn,
            author=None,
            role=ChatMessage.Role.SYSTEM,
            source=ChatMessage.Source.SYSTEM,
            content=note,
        )
        Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.FAILED)
        _completed_event(turn, session, model=model, message=message, error=reason)


def _completed_event(
    turn: Turn,
    session: TurnSession | None,
    *,
    model: str,
    message: ChatMessage | None,
    error: str,
) -> None:
    broadcast_on_commit(
        turn.campaign_id,
        [
            event(
                "gm_turn_completed",
                {
                    "status": Turn.Status.FAILED if error else Turn.Status.COMPLETED,
                    "model": model,
                    "message": message.pk if message else None,
                    "content": message.content if message else "",
                    "invocations": session.invocations if session else [],
                    "error": error,
                },
                source=EventSource.SYSTEM if error else EventSource.AI_TOOL_EXECUTION,
                turn=turn.pk,
            )
        ],
    )
