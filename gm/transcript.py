"""Writes and reads of a turn's transcript (gm.models). Every write is made by the runner that
holds the turn's lease (`gm.lease.lease_check`), checked under the campaign and turn locks in the
write's own transaction: a runner whose lease went to another worker stores nothing more."""

from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.models import Turn
from gm.base import Round
from gm.lease import lease_check
from gm.models import GMRound, GMTranscript


def transcript_open(*, turn: Turn, state: dict[str, Any]) -> dict[str, Any]:
    """The state the turn's GM decides from: `state` on its first attempt, stored; the stored
    one on every later attempt. Assumes the campaign lock (the claim holds it)."""
    transcript, _ = GMTranscript.objects.get_or_create(
        turn=turn, defaults={"campaign_id": turn.campaign_id, "state": state}
    )
    return transcript.state


def transcript_text(*, turn: Turn) -> str:
    """The narration of the turn's stored rounds: what a turn that ends without its runner
    (cancelled while queued to resume, failed by its watchdog) keeps as the GM's words."""
    said = GMRound.objects.filter(turn=turn).order_by("index").values_list("text", flat=True)
    return "".join(said).strip()


def transcript_state(*, turn: Turn) -> dict[str, Any]:
    """The state the turn's GM decides from, as its first attempt stored it."""
    return GMTranscript.objects.values_list("state", flat=True).get(turn_id=turn.pk)


def transcript_rounds(*, turn: Turn) -> list[Round]:
    return [_round(row) for row in GMRound.objects.filter(turn_id=turn.pk).order_by("index")]


def round_record(
    *,
    turn: Turn,
    owner: str,
    attempt: int,
    index: int,
    content: list[dict[str, Any]],
    stop_reason: str,
    model: str,
    text: str,
) -> Round:
    with transaction.atomic(durable=True):
        lease_check(turn, owner)
        complete = not any(block["type"] == "tool_use" for block in content)
        row = GMRound.objects.create(
            campaign_id=turn.campaign_id,
            turn=turn,
            index=index,
            attempt=attempt,
            model=model,
            content=content,
            stop_reason=stop_reason,
            text=text,
            results=[] if complete else None,
            completed_at=timezone.now() if complete else None,
        )
    return _round(row)


def round_complete(*, turn: Turn, owner: str, index: int, results: list[dict[str, Any]]) -> Round:
    with transaction.atomic(durable=True):
        lease_check(turn, owner)
        row = GMRound.objects.get(turn_id=turn.pk, index=index)
        row.results, row.completed_at = results, timezone.now()
        row.save(update_fields=["results", "completed_at"])
    return _round(row)


def _round(row: GMRound) -> Round:
    return Round(
        index=row.index,
        content=row.content,
        stop_reason=row.stop_reason,
        model=row.model,
        text=row.text,
        results=row.results,
    )
