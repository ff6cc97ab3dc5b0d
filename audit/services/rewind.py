"""Rewind: undo a turn and everything the table did after it, newest first, in one transaction.

"Undo from here" (`turn_undo` with `cascade`) reverts a turn and only the later calls that
depend on what it wrote. A rewind is what a table means by "erase to here": that turn and every
later turn of the campaign go — the GM's calls and the table's own hand alike (the GM's hand
turns, and the token moves people made in no turn since the turn began) — and so does any later
call that wrote over what they wrote (an earlier turn's call approved after it, say), since the
world cannot be put back faithfully under it.

It runs on the revert machinery (`audit.services.revert`: the same restore, the same chained
transitions, the same events) and its one permission rule (`Rights.reverts`): only if the caller
may revert every call and every turn in it; otherwise a 403 naming what blocks it, recorded,
and nothing changes. A call that cannot be reverted (no snapshot) is a 409: the rewind would not
be faithful. The plan is the same computation without the writes
(docs/architecture.md#rewind-and-redo).
"""

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q

from ai_tools import entities
from audit.models import SecurityEvent, ToolInvocation
from audit.permissions import Rights
from audit.services.approval import held_calls_withdraw
from audit.services.revert import (
    COMMITTED,
    _dependents,
    _diff,
    _lock_turn,
    _mark_turn_reverted,
    _planned,
    _revert_rows,
    skip_reason,
)
from campaigns.events import InteractionReverted, InvocationReverted
from campaigns.models import Campaign, Source, Turn
from campaigns.realtime import broadcast_on_commit, event
from campaigns.security import recording_denials
from campaigns.selectors import campaign_get_visible, turn_get
from core.errors import Conflict, Forbidden


@dataclass
class RewindResult:
    turns: list[int]  # the turns undone, newest first
    reverted: list[str]  # the calls reverted, newest first


@dataclass
class _Span:
    """What a rewind from `start` covers: the turns not yet undone (oldest first) and the
    committed calls to revert (newest first)."""

    start: Turn
    turns: list[Turn]
    rows: list[ToolInvocation]


def turn_rewind_plan(
    *, campaign_id: Any, turn_id: Any, user: Any, ip: str | None = None
) -> dict[str, Any]:
    """What `turn_rewind` would do, computed without changing anything, with the same checks in
    the same order (a Forbidden here is a 403 and a security event, like the rewind's; a call
    that cannot be reverted is listed in `blocked`, which the rewind refuses with a 409)."""
    with recording_denials(user=user, ip=ip), transaction.atomic():
        campaign = campaign_get_visible(campaign_id=campaign_id, user=user)
        span = _span(campaign, turn_get(campaign=campaign, turn_id=turn_id), lock=False)
        _authorize(campaign, span, user=user)
        blocked = [r for r in span.rows if skip_reason(r)]
        return {
            "turns": [_turn_planned(t) for t in reversed(span.turns)],
            "invocations": [_planned(r) for r in span.rows],
            "blocked": [_planned(r) for r in blocked],
            "diff": _diff(campaign, [r for r in span.rows if not skip_reason(r)]),
        }


def turn_rewind(
    *, campaign_id: Any, turn_id: Any, user: Any, reason: str = "", ip: str | None = None
) -> RewindResult:
    """Rewind to before `turn_id`: that turn and every later one undone (their messages leave
    the feed, a call of theirs still waiting for approval is rejected), every committed call of
    them and of the table's hand since reverted newest first, all in one transaction under the
    campaign lock, or nothing at all. Durable: nested in a caller's transaction it raises
    RuntimeError."""
    with recording_denials(user=user, ip=ip), transaction.atomic(durable=True):
        campaign, start = _lock_turn(campaign_id, turn_id, user)
        span = _span(campaign, start, lock=True)
        _authorize(campaign, span, user=user)
        unfaithful = [r for r in span.rows if skip_reason(r)]
        if unfaithful:
            raise Conflict(
                f"{_call_words(unfaithful[0])} cannot be reverted (its before-state was not "
                "captured), so the table cannot be rewound faithfully past it.",
                conflicts=[str(r.pk) for r in unfaithful],
            )
        for turn in span.turns:
            held_calls_withdraw(
                campaign=campaign,
                turn=turn,
                by=user,
                reason=f"{user.get_username()} rewound the table.",
            )
        state = _revert_rows(campaign, span.rows, user=user, reason=reason)
        for turn in span.turns:
            _mark_turn_reverted(turn, user=user, reason=reason)
        broadcast_on_commit(campaign.pk, _events(campaign, span, state=state, reason=reason))
    return RewindResult(
        turns=[t.pk for t in reversed(span.turns)], reverted=[str(r.pk) for r in span.rows]
    )


def _span(campaign: Campaign, start: Turn, *, lock: bool) -> _Span:
    """The turns from `start` on (in the feed's order, `created_at` then id) not yet undone,
    and the calls a rewind reverts: theirs, the table's hand in no turn since `start` began,
    and every later call depending on those (transitively). Row-locked if `lock` (the caller
    holds the campaign lock, so the order stays campaign → rows)."""
    later = Q(created_at__gt=start.created_at) | Q(created_at=start.created_at, pk__gte=start.pk)
    turns = Turn.objects.filter(campaign=campaign).filter(later).order_by("created_at", "pk")
    # Locked rows are read alone (no join: FOR UPDATE would lock the people's rows too); a name
    # is read only for a refusal, the plan reads them all at once.
    turns = list(turns.select_for_update() if lock else turns.select_related("actor"))
    live = [t for t in turns if t.reverted_at is None]
    ids = [t.pk for t in live]
    rows = ToolInvocation.objects.filter(campaign=campaign, status=COMMITTED).filter(
        Q(turn_id__in=ids) | Q(turn__isnull=True, created_at__gte=start.created_at)
    )
    own = list(rows.select_for_update() if lock else rows.select_related("user"))
    dependents = _dependents(campaign, own, closure=True, lock=lock) if own else []
    chain = sorted(own + dependents, key=lambda r: -r.sequence)
    return _Span(start=start, turns=live, rows=chain)


def _authorize(campaign: Campaign, span: _Span, *, user: Any) -> None:
    """The one revert rule (`Rights.reverts`) over every turn and every call of the span; the
    first refused is named in the Forbidden, which `recording_denials` records."""
    rights = Rights(campaign=campaign, user=user)
    for turn in reversed(span.turns):
        if not rights.reverts(turn.actor_id):
            _refuse(campaign, f"turn:{turn.pk}", f"{turn.actor.get_username()}’s turn {turn.pk}")
    for row in span.rows:
        if not rights.reverts(row.user_id):
            _refuse(campaign, str(row.pk), _call_words(row))


def _refuse(campaign: Campaign, target: str, what: str) -> None:
    raise Forbidden(
        f"You may not rewind past {what}: only its actor, the campaign owner or a co-GM may "
        "undo it, and a rewind undoes everything from here on or nothing.",
        kind=SecurityEvent.Kind.REVERT_DENIED,
        campaign=campaign,
        target=f"rewind:{target}",
    )


def _call_words(row: ToolInvocation) -> str:
    whose = row.user.get_username() if row.user_id else "someone"
    where = f" in turn {row.turn_id}" if row.turn_id else ""
    return f"{whose}’s {row.tool_name} call{where}"


def _turn_planned(turn: Turn) -> dict[str, Any]:
    return {"id": turn.pk, "actor": turn.actor.get_username(), "status": turn.status}


def _events(
    campaign: Campaign, span: _Span, *, state: list[dict[str, Any]], reason: str
) -> list[dict[str, Any]]:
    """What every client hears, newest first: `interaction_reverted` for each turn undone (its
    calls, and the restored state of what they wrote), `invocation_reverted` for each call of
    no turn in the span; each carries the state the rewind left, so the order cannot mislead."""
    by_key = {(s["entity"], str(s["id"]), s["facet"]): s for s in state}
    turn_ids = {t.pk for t in span.turns}

    def restored(rows: list[ToolInvocation]) -> list[dict[str, Any]]:
        keys = dict.fromkeys(k for r in rows for k in entities.logged_keys(r.write_set))
        found = (by_key.get(entities.parse(k)) for k in keys)
        return [s for s in found if s is not None]

    out = []
    for turn in reversed(span.turns):
        rows = [r for r in span.rows if r.turn_id == turn.pk]
        out.append(
            event(
                InteractionReverted(
                    turn=turn.pk,
                    invocations=[str(r.pk) for r in rows],
                    tool_names=[r.tool_name for r in rows],
                    state=restored(rows),
                    reason=reason,
                ),
                source=Source.SYSTEM,
                turn=turn.pk,
            )
        )
    for row in span.rows:
        if row.turn_id not in turn_ids:
            out.append(
                event(
                    InvocationReverted(
                        invocation=str(row.pk),
                        tool_name=row.tool_name,
                        state=restored([row]),
                        reason=reason,
                    ),
                    source=Source.SYSTEM,
                    turn=row.turn_id,
                    invocation=row.pk,
                )
            )
    return out
