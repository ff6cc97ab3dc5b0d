"""Revert and undo: put the world back exactly, once, and tell every client."""

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from ai_tools import entities, registry
from ai_tools.base import ToolContext
from audit.chain import transitions_append
from audit.models import SkipReason, ToolInvocation, WriteSetEntry
from audit.permissions import authorize_revert
from audit.selectors import invocation_get
from audit.services.approval import held_calls_reject
from campaigns.events import InteractionReverted, InvocationReverted
from campaigns.models import Campaign, ChatMessage, Revertible, Source, Turn
from campaigns.realtime import broadcast_on_commit, event
from campaigns.security import recording_denials
from campaigns.selectors import campaign_get_visible, turn_get
from core.errors import Conflict, InvalidInput
from core.queries import locked_if

COMMITTED = ToolInvocation.Status.COMMITTED
# What a snapshot that does not fit raises on restore: a missing or foreign key, a value of the
# wrong type or range, a row that vanished (and InvalidInput, a tool no longer registered).
UNFAITHFUL = (
    LookupError,
    TypeError,
    ValueError,
    AttributeError,
    OverflowError,
    ValidationError,
    DataError,
    IntegrityError,
    InvalidInput,
)


@dataclass
class RevertResult:
    reverted: bool
    skip_reason: SkipReason | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class UndoResult:
    reverted: list[str]
    skipped: list[dict[str, str]]


def skip_reason(row: ToolInvocation) -> SkipReason | None:
    if row.status == ToolInvocation.Status.REVERTED:
        return SkipReason.ALREADY_REVERTED
    if row.status != COMMITTED:
        return SkipReason.NOT_COMMITTED
    if not row.revertible:
        return SkipReason.NOT_REVERTIBLE
    return None


def invocation_revert(
    *,
    campaign_id: Any,
    invocation_id: Any,
    user: Any,
    reason: str = "",
    cascade: bool = False,
    ip: str | None = None,
) -> RevertResult:
    """Revert one invocation. Idempotent: concurrent calls serialise on the campaign lock and
    the row lock, and all but the first report `already_reverted`. A later invocation that
    depends on what this one wrote is a Conflict, or with `cascade` is reverted first. Durable:
    nested in a caller's transaction it raises RuntimeError."""
    with recording_denials(user=user, ip=ip), transaction.atomic(durable=True):
        campaign, row = _lock_invocation(campaign_id, invocation_id, user)
        authorize_revert(user=user, campaign=campaign, actor_id=row.user_id, target=str(row.pk))
        reason_skipped = skip_reason(row)
        if reason_skipped:
            return RevertResult(reverted=False, skip_reason=reason_skipped)
        chain = _chain(campaign, [row], cascade=cascade, user=user)
        state = _revert_rows(campaign, chain, user=user, reason=reason)
        cascaded = [str(r.pk) for r in chain if r.pk != row.pk]
        broadcast_on_commit(
            campaign.pk,
            [
                event(
                    InvocationReverted(
                        invocation=str(r.pk), tool_name=r.tool_name, state=state, reason=reason
                    ),
                    source=Source.SYSTEM,
                    turn=r.turn_id,
                    invocation=r.pk,
                )
                for r in chain
            ],
        )
    return RevertResult(reverted=True, details={"cascaded": cascaded, "state": state})


def turn_undo(
    *,
    campaign_id: Any,
    turn_id: Any,
    user: Any,
    reason: str = "",
    cascade: bool = False,
    ip: str | None = None,
) -> UndoResult:
    """Undo a whole turn atomically: its committed invocations newest first, its messages
    marked reverted; a call of it still waiting for approval is rejected, so none can be approved
    onto the undone turn. Rows that cannot be reverted are reported with their skip reason. Durable:
    nested in a caller's transaction it raises RuntimeError."""
    with recording_denials(user=user, ip=ip), transaction.atomic(durable=True):
        campaign, turn = _lock_turn(campaign_id, turn_id, user)
        authorize_revert(
            user=user, campaign=campaign, actor_id=turn.actor_id, target=f"turn:{turn.pk}"
        )
        rows = _turn_calls(campaign.pk, turn.pk)
        for row in rows:  # the turn in hand, locked: no read of it per row (`_restore`)
            row.turn = turn
        held_calls_reject(
            campaign=campaign,
            rows=[r for r in rows if r.status == ToolInvocation.Status.AWAITING_APPROVAL],
            by=user,
            reason=f"{_name(user)} undid this turn.",
        )
        todo = [r for r in rows if skip_reason(r) is None]
        skipped = [
            {"id": str(r.pk), "skip_reason": skip_reason(r)}
            for r in rows
            if skip_reason(r) is not None
        ]
        if turn.reverted_at is not None and not todo:
            return UndoResult(reverted=[], skipped=skipped)
        chain = _chain(campaign, todo, cascade=cascade, user=user) if todo else []
        state = _revert_rows(campaign, chain, user=user, reason=reason)
        _mark_turn_reverted(turn, user=user, reason=reason)
        broadcast_on_commit(
            campaign.pk,
            [
                event(
                    InteractionReverted(
                        turn=turn.pk,
                        invocations=[str(r.pk) for r in chain],
                        tool_names=[r.tool_name for r in chain],
                        state=state,
                        reason=reason,
                    ),
                    source=Source.SYSTEM,
                    turn=turn.pk,
                )
            ],
        )
    return UndoResult(reverted=[str(r.pk) for r in chain], skipped=skipped)


def rewound_in_place(campaign: Campaign, *, turn: Turn, by: Any) -> int:
    """For a replay of `turn` (gm/replay.py), inside the caller's transaction, which must roll
    back: put the world back as it stood before the turn, as far as the log can, by restoring
    the snapshots of every committed call from the turn's first onwards, newest first. No row
    is marked, no transition chained, no event sent (`by` is who the tools' reverts run as);
    the number of calls restored."""
    first = (
        ToolInvocation.objects.filter(campaign=campaign, turn=turn)
        .order_by("sequence")
        .values_list("sequence", flat=True)
        .first()
    )
    later = ToolInvocation.objects.filter(campaign=campaign, status=COMMITTED, revertible=True)
    if first is not None:
        later = later.filter(sequence__gte=first)
    else:
        later = later.filter(turn_id__gt=turn.pk)
    rows = list(later.order_by("-sequence"))
    for row in rows:
        _restore(campaign, row, by)
    return len(rows)


def _name(user: Any) -> str:
    return user.get_username() if user is not None else "Someone"


def invocation_revert_plan(
    *,
    campaign_id: Any,
    user: Any,
    invocation_id: Any,
    cascade: bool = False,
    ip: str | None = None,
) -> dict[str, Any]:
    """What `invocation_revert` would do, computed without changing anything: the invocations
    it would revert, the later ones in the way, and before → after → now.

    A plan answers as the action would: the same permission checks, in the same order, over the
    target and its cascade (a Forbidden here is a 403 and a security event, like the action's),
    and `conflicts` lists exactly what the action would refuse with a 409 (described in
    `conflicting_invocations`, so naming them needs no cascade plan the caller may not see)."""
    with recording_denials(user=user, ip=ip), transaction.atomic():
        campaign = campaign_get_visible(campaign_id=campaign_id, user=user)
        row = invocation_get(campaign=campaign, invocation_id=invocation_id)
        target = (row.user_id, str(row.pk), [row])
        return _plan(campaign, target, user=user, cascade=cascade)


def turn_undo_plan(
    *,
    campaign_id: Any,
    user: Any,
    turn_id: Any,
    cascade: bool = False,
    ip: str | None = None,
) -> dict[str, Any]:
    """What `turn_undo` would do, computed without changing anything; the same answer shape
    and the same checks as `invocation_revert_plan`, over every invocation of the turn."""
    with recording_denials(user=user, ip=ip), transaction.atomic():
        campaign = campaign_get_visible(campaign_id=campaign_id, user=user)
        turn = turn_get(campaign=campaign, turn_id=turn_id)
        rows = list(ToolInvocation.objects.filter(campaign=campaign, turn=turn))
        return _plan(campaign, (turn.actor_id, f"turn:{turn.pk}", rows), user=user, cascade=cascade)


def _plan(
    campaign: Campaign,
    target: tuple[Any, str, list[ToolInvocation]],
    *,
    user: Any,
    cascade: bool,
) -> dict[str, Any]:
    """The plan over `target`: (the actor whose calls they are, the name a denial records,
    the invocations to revert)."""
    actor_id, label, rows = target
    authorize_revert(user=user, campaign=campaign, actor_id=actor_id, target=label)
    todo = [r for r in rows if skip_reason(r) is None]
    later = _dependents(campaign, todo, closure=cascade)
    conflicts = _cascade_blockers(campaign, later, user=user) if cascade else later
    chain = sorted(todo + (later if cascade else []), key=lambda r: -r.sequence)
    skipped = sorted((r for r in rows if skip_reason(r)), key=lambda r: -r.sequence)
    return {
        "invocations": [_planned(r) for r in chain + skipped],
        "conflicts": [str(r.pk) for r in conflicts],
        "conflicting_invocations": [_planned(r) for r in conflicts],
        "diff": _diff(campaign, chain),
    }


def _planned(row: ToolInvocation) -> dict[str, Any]:
    return {
        "id": str(row.pk),
        "tool_name": row.tool_name,
        "summary": registry.summary(row.tool_name, row.input),
        "skip_reason": skip_reason(row),
    }


def _cascade_blockers(
    campaign: Campaign, later: list[ToolInvocation], *, user: Any
) -> list[ToolInvocation]:
    """For a plan: the later invocation a cascade would stop at with a Conflict (none if it
    would go through). A Forbidden propagates, as it does from the revert itself."""
    try:
        _authorize_cascade(campaign, later, user=user)
    except Conflict as blocked:
        return [r for r in later if str(r.pk) in blocked.conflicts]
    return []


def _lock_invocation(campaign_id: Any, invocation_id: Any, user: Any):
    campaign = campaign_get_visible(campaign_id=campaign_id, user=user, lock=True)
    row = invocation_get(campaign=campaign, invocation_id=invocation_id, lock=True)
    return campaign, row


def _lock_turn(campaign_id: Any, turn_id: Any, user: Any):
    campaign = campaign_get_visible(campaign_id=campaign_id, user=user, lock=True)
    return campaign, turn_get(campaign=campaign, turn_id=turn_id, lock=True)


def _turn_calls(campaign_id: Any, turn_id: Any) -> list[ToolInvocation]:
    """A turn's calls, locked, newest first."""
    calls = ToolInvocation.objects.select_for_update().filter(
        campaign_id=campaign_id, turn_id=turn_id
    )
    return list(calls.order_by("-sequence"))


def _later_entries(campaign_id: Any, roots: list[str], after: int, excluded: list[Any]) -> QuerySet:
    """The committed write-set entries after a sequence on these entities, but those of the
    `excluded` calls."""
    return (
        WriteSetEntry.objects.filter(
            campaign_id=campaign_id,
            root__in=roots,
            sequence__gt=after,
            invocation__status=COMMITTED,
        )
        .exclude(invocation_id__in=excluded)
        .values_list("invocation_id", "sequence", "key")
    )


def _dependents(
    campaign: Campaign, rows: list[ToolInvocation], *, closure: bool, lock: bool = False
) -> list[ToolInvocation]:
    """Later committed invocations that wrote or read what `rows` wrote; with `closure`, also
    those depending on them, transitively. Newest first; row-locked as they are read if `lock`
    (the caller holds the campaign lock, so lock order stays campaign → rows)."""
    found: dict[Any, ToolInvocation] = {}
    frontier = list(rows)
    excluded = {r.pk for r in rows}
    while frontier:
        writes = [(k, r.sequence) for r in frontier for k in r.write_set]
        if not writes:
            break
        candidates = _later_entries(
            campaign.pk,
            sorted({entities.root(k) for k, _ in writes}),
            min(s for _, s in writes),
            sorted(excluded | set(found)),
        )
        hits = {
            inv
            for inv, seq, k in candidates
            if any(seq > s and entities.overlaps(k, w) for w, s in writes)
        }
        calls = locked_if(ToolInvocation.objects.filter(pk__in=sorted(hits)), lock)
        frontier = list(calls) if hits else []
        found.update((r.pk, r) for r in frontier)
        if not closure:
            break
    return sorted(found.values(), key=lambda r: -r.sequence)


def _chain(
    campaign: Campaign, rows: list[ToolInvocation], *, cascade: bool, user: Any
) -> list[ToolInvocation]:
    """Everything to revert, newest first; a Conflict if later work is in the way."""
    later = _dependents(campaign, rows, closure=cascade, lock=True)
    if later and not cascade:
        raise Conflict(
            "Later invocations depend on this; revert them first or use cascade.",
            conflicts=[str(r.pk) for r in later],
        )
    _authorize_cascade(campaign, later, user=user)
    return sorted(list(rows) + later, key=lambda r: -r.sequence)


def _authorize_cascade(campaign: Campaign, later: list[ToolInvocation], *, user: Any) -> None:
    """Every later invocation a cascade reverts, newest first, must be revertible (else a
    Conflict) and the user must be allowed to revert it (else Forbidden). The revert and its
    plan both call this, so a plan can never promise what the revert would refuse."""
    for dependent in later:
        if skip_reason(dependent):
            raise Conflict(
                f"Later invocation {dependent.pk} cannot be reverted "
                f"({skip_reason(dependent)}), so this cannot be undone faithfully.",
                conflicts=[str(dependent.pk)],
            )
        authorize_revert(
            user=user, campaign=campaign, actor_id=dependent.user_id, target=str(dependent.pk)
        )


def _revert_rows(
    campaign: Campaign, chain: list[ToolInvocation], *, user: Any, reason: str
) -> list[dict[str, Any]]:
    """Run each tool's revert newest first; return the restored state of every entity touched.
    Each status change is chained as a transition link in the same transaction."""
    now = timezone.now()
    touched: list[str] = []
    changes: list[tuple[ToolInvocation, str]] = []
    for row in chain:
        _restore(campaign, row, user)
        changes.append((row, row.status))
        row.status = ToolInvocation.Status.REVERTED
        _mark_reverted(row, user=user, reason=reason, at=now, also=("status",))
        touched += [k for k in entities.logged_keys(row.write_set) if k not in touched]
    if changes:
        transitions_append(campaign_id=campaign.pk, changes=changes, by=user, reason=reason, at=now)
    return [entities.describe(k, entities.capture(campaign, k)) for k in touched]


def _restore(campaign: Campaign, row: ToolInvocation, user: Any) -> None:
    """Run the row's tool revert. A snapshot that no longer fits the world or the code (a row
    from older code, an edited one) cannot be restored faithfully: a Conflict, and the whole
    revert rolls back, instead of a half-applied restore or a 500."""
    try:
        tool = registry.write_tool(row.tool_name)
        tool.revert(ToolContext(campaign=campaign, actor=user, turn=row.turn), row.revert_snapshot)
    except UNFAITHFUL as exc:
        raise Conflict(
            f"Invocation {row.pk} cannot be reverted faithfully: its snapshot does not fit "
            f"({type(exc).__name__}).",
            conflicts=[str(row.pk)],
        ) from exc


def _mark_reverted(
    target: Revertible, *, user: Any, reason: str, at: Any, also: tuple[str, ...] = ()
) -> None:
    """Record who undid a turn or reverted a row, when and why; `also` names other fields the
    caller changed on it."""
    target.reverted_at, target.reverted_by, target.revert_reason = at, user, reason
    target.save(update_fields=[*also, *Revertible.REVERT_FIELDS])


def _mark_turn_reverted(turn: Turn, *, user: Any, reason: str) -> None:
    _mark_reverted(turn, user=user, reason=reason, at=timezone.now())
    ChatMessage.objects.filter(turn=turn).update(reverted=True)


def _diff(campaign: Campaign, chain: list[ToolInvocation]) -> list[dict[str, Any]]:
    """before (what the revert restores) → after (what the call wrote) → now, per field."""
    before: dict[str, dict | None] = {}
    after: dict[str, dict | None] = {}
    for row in chain:  # newest first: the oldest row's snapshot is what is restored
        snapshot = entities.snapshot_map(row.revert_snapshot)
        post_state = entities.logged_map(row.post_state)
        for k in entities.logged_keys(row.write_set):
            before[k] = snapshot.get(k)
            after.setdefault(k, post_state.get(k))
    rows = []
    for k in before:
        now = entities.capture(campaign, k)
        kind, pk, _ = entities.parse(k)
        names = list(dict.fromkeys([*(before[k] or {}), *(after[k] or {}), *(now or {})]))
        for name in names:
            values = [(d or {}).get(name) for d in (before[k], after[k], now)]
            if values[0] != values[1] or values[0] != values[2]:
                rows.append(
                    {
                        "entity": kind,
                        "id": pk,
                        "field": name,
                        "before": values[0],
                        "after": values[1],
                        "now": values[2],
                    }
                )
    return rows
