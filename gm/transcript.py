"""Writes and reads of a turn's transcript (gm.models). Every write is made by the runner that
holds the turn's lease (`gm.lease.lease_check`), checked under the campaign and turn locks in the
write's own transaction: a runner whose lease went to another worker stores nothing more."""

import functools
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.models import Turn
from gm import rows
from gm.base import Round
from gm.lease import lease_check
from gm.models import GMRound, GMTranscript


def transcript_open(*, turn: Turn, state: dict[str, Any]) -> dict[str, Any]:
    """Store `state`, the state the turn's GM decides from on every attempt, at its first
    claim (later attempts read it back, `transcript_state`); a turn has one, so a second raises
    IntegrityError. Assumes the campaign lock (the claim holds it)."""
    GMTranscript.objects.create(turn=turn, campaign_id=turn.campaign_id, state=state)
    return state


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
    params = [rows.prep(GMRound, "results", results), timezone.now(), turn.pk, index]
    with transaction.atomic(durable=True):
        lease_check(turn, owner)
        # Raw SQL: UPDATE … RETURNING, which the ORM cannot say (as querysets: a read of the
        # round and its write, at every round that called a tool).
        found = rows.fetch_one(_complete_sql(), params)
    if found is None:
        raise GMRound.DoesNotExist(f"No round {index} of turn {turn.pk}.")
    fields = [GMRound._meta.get_field(name) for name in ROUND]
    return Round(*(rows.from_db(field, value) for field, value in zip(fields, found, strict=True)))


# What a `Round` holds of its row.
ROUND = ("index", "content", "stop_reason", "model", "text", "results")


@functools.cache
def _complete_sql() -> str:
    c = functools.partial(rows.column, GMRound)
    return (
        f"UPDATE {rows.table(GMRound)} SET {c('results')} = %s, {c('completed_at')} = %s "
        f"WHERE {c('turn')} = %s AND {c('index')} = %s "
        f"RETURNING {', '.join(c(name) for name in ROUND)}"
    )


def _round(row: GMRound) -> Round:
    return Round(**{name: getattr(row, name) for name in ROUND})
