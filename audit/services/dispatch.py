"""The audited dispatch: the one way in for every write tool call."""

import functools
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar

from django.db import connection, transaction
from django.utils import timezone

from ai_tools import entities, registry
from ai_tools.base import Powers, ToolContext, WriteTool
from audit.chain import seal
from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from audit.policy import needs_approval
from audit.services.common import (
    ToolFailed,
    ToolRefused,
    call_held,
    campaign_lock,
    guarded,
    log_append_sql,
)
from audit.services.preview import call_preview
from campaigns.events import ApprovalRequested, StateChanged
from campaigns.models import Campaign, Source, Turn
from campaigns.permissions import runs_table
from campaigns.realtime import broadcast_on_commit, event
from core.errors import AuditLogFailure, CallRefused, Conflict, InvalidInput
from core.faults import UNAVAILABLE_DETAIL, is_unavailable

logger = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")
# A made-up name longer than the column is logged cut short, not turned into an audit failure.
TOOL_NAME_MAX = ToolInvocation._meta.get_field("tool_name").max_length


def _outage_fails_closed(dispatch: Callable[P, T]) -> Callable[P, T]:
    """A database outage anywhere in the dispatch is nobody's tool error: the transaction rolls
    back (no row, no mutation) and the caller gets the fail-closed AuditLogFailure (503, retry),
    never a `failed` row that blames the tool. (The channel layer is not reached inside the
    dispatch: events leave after commit, and a lost broadcast costs no write.)"""

    @functools.wraps(dispatch)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return dispatch(*args, **kwargs)
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            logger.warning("dispatch failed closed on an outage: %s: %s", type(exc).__name__, exc)
            raise AuditLogFailure(UNAVAILABLE_DETAIL) from exc

    return wrapper


@_outage_fails_closed
def invocation_dispatch(
    *,
    campaign: Campaign,
    actor: Any,
    tool_name: str,
    input: Any,
    turn: Turn | None = None,
    model: str = "",
    source: InvocationOrigin = InvocationOrigin.API,
    requested_by: Any = None,
    tool_use_id: str = "",
    ip: str | None = None,
) -> ToolInvocation:
    """Run one write tool call under the write-ahead log.

    The log row, the snapshot and the mutation commit in one transaction under the campaign
    lock, or not at all. If the row cannot be written the tool does not run (AuditLogFailure);
    if the snapshot cannot be taken the tool runs but the row is marked not revertible. A tool
    error, invalid input and an unknown tool name each leave a `failed` row (an unknown tool's
    with a blank tier) and no mutation; a call into an undone turn raises Conflict.

    Each path commits in a durable transaction of its own (nested in a caller's, it raises
    RuntimeError): the row and its events are final when this returns, never at the mercy of a
    caller's rollback.

    Provenance (docs/architecture.md#the-log-row): `actor` is whose turn it is; `requested_by` is
    the person who made the call. It is stored only when that is someone else (the owner posting
    into a player's turn), so a null `requested_by` always means "the actor, or the GM on the
    actor's turn".

    Least privilege (docs/tools.md#who-may-call-what): the call runs with the powers of the
    person who makes it (`requested_by`, else `actor`), or the GM's for the GM's own calls
    (source `gm`). A call those powers do not reach is refused before anything else happens,
    held or not: a `failed` row and a `tool_call_denied` security event (from `ip`) in one
    transaction, then CallRefused (403).

    A call the campaign's approval policy holds back (`audit.policy.needs_approval`; never a
    person's own hand, source `user`) does not run: its row is written `awaiting_approval`
    with a preview of what it would change (`audit.services.preview`), `approval_requested`
    goes out and its expiry is scheduled; `audit.services.approval` takes it from there. A
    call that needs no approval pays nothing for the check unless the policy is `adaptive`.

    `tool_use_id` names a GM's call within its turn: the log holds at most one row per (turn,
    tool_use_id), so a second dispatch of one tool_use fails closed and changes nothing.
    """
    row_fields = {
        "campaign_id": campaign.pk,
        "user_id": actor.pk,
        "requested_by_id": _caller_if_not_actor(requested_by, actor),
        "turn": turn,
        "tool_name": tool_name[:TOOL_NAME_MAX],
        "tool_use_id": tool_use_id,
        "tool_tier": "",
        "input": input,
        "model": model,
        "source": source,
    }
    try:
        tool = registry.write_tool(tool_name)
    except InvalidInput as unknown:
        return _record_failed(row_fields, unknown.detail)
    row_fields["tool_tier"] = tool.tier
    problem = tool.validate(input)
    if problem:
        return _record_failed(row_fields, f"Invalid input: {problem}")
    try:
        with transaction.atomic(durable=True):
            locked = campaign_lock(campaign.pk)
            powers = _powers(locked, caller=requested_by or actor, source=source)
            ctx = ToolContext(campaign=locked, actor=actor, turn=turn, powers=powers)
            held = _held(locked, tool, model, source, ctx=ctx, data=input)
            if held is not None:
                return _pause(tool, ctx, row_fields, locked, reason=held)
            row = _new_row(row_fields, locked, status=ToolInvocation.Status.COMMITTED)
            event_seq = _run(tool, ctx, row, after=locked.event_seq)
            _append(row, locked, event_seq=event_seq)
    except ToolRefused as refusal:
        row = _record_failed(row_fields, str(refusal), refusal=refusal, ip=ip)
        raise CallRefused(row.error, invocation=row.pk) from refusal
    except ToolFailed as failure:
        return _record_failed(row_fields, str(failure))
    return row


def _powers(campaign: Campaign, *, caller: Any, source: str) -> Powers:
    """Whose rights a call runs with: the GM's for the GM's own calls, else those of the person
    who makes it (the GM's too when that person runs the table)."""
    if source == InvocationOrigin.GM:
        return Powers(gm=True)
    return Powers(gm=runs_table(campaign=campaign, user=caller), person_id=caller.pk)


def _held(
    locked: Campaign, tool: WriteTool, model: str, source: str, *, ctx: ToolContext, data: Any
) -> str | None:
    """Why the call must wait for a human, or None. A person's own hand is never held: the
    human in the loop is for what the AI (or an agent through the API) does."""
    if source == InvocationOrigin.USER:
        return None
    return needs_approval(locked, tool, model, ctx=ctx, data=data)


def _pause(
    tool: WriteTool,
    ctx: ToolContext,
    fields: dict[str, Any],
    locked: Campaign,
    *,
    reason: str,
) -> ToolInvocation:
    """Hold the call: its row `awaiting_approval` with the preview, `approval_requested` with
    it, and the job that expires it after APPROVAL_TIMEOUT, in the caller's transaction under
    the campaign lock. A call its tool would refuse raises ToolFailed (a `failed` row, as
    without approval): there is nothing to ask anyone about."""
    preview = call_preview(tool, ctx, fields["input"], reason=reason)
    row = _new_row(fields, locked, status=ToolInvocation.Status.AWAITING_APPROVAL, preview=preview)
    requested = event(
        approval_requested(row, actor=ctx.actor, campaign=locked),
        source=_event_source(row.source),
        turn=row.turn_id,
        invocation=row.pk,
    )
    row.broadcast_events = broadcast_on_commit(
        row.campaign_id,
        [requested],
        after=locked.event_seq,
        fog_in_play=getattr(locked, "fog_in_play", None),
    )
    _append(row, locked, event_seq=locked.event_seq + 1)
    call_held.send(sender=ToolInvocation, row=row, expires_at=approval_deadline(row, locked))
    return row


def approval_deadline(row: ToolInvocation, campaign: Campaign | None = None) -> datetime:
    """When a held call expires unless answered: when it was held, plus its campaign's
    approval timeout as it stands now (the owner may change it while the call waits)."""
    return row.created_at + timedelta(seconds=(campaign or row.campaign).approval_timeout)


def approval_requested(row: ToolInvocation, *, actor: Any, campaign: Campaign) -> ApprovalRequested:
    """The held call as the approval card shows it (docs/api.md#the-live-feed-websocket)."""
    return ApprovalRequested(
        invocation=str(row.pk),
        tool_name=row.tool_name,
        tool_tier=row.tool_tier,
        input=row.input,
        summary=registry.summary(row.tool_name, row.input),
        model=row.model,
        actor=actor.get_username(),
        reason=(row.preview or {}).get("reason", ""),
        preview=(row.preview or {}).get("diff", []),
        expires_at=approval_deadline(row, campaign).isoformat(),
    )


def approved_call_run(held: ToolInvocation, locked: Campaign) -> ToolInvocation:
    """Run an approved call now, as a new row at the log's tip (`approval_of` = the held row):
    the log's order stays the order the world changed in. Through the dispatch's own steps,
    against the state as it is now; a tool refusal leaves a `failed` row and no change, the
    approval still on record. Assumes the campaign lock, in the caller's transaction; a turn
    undone meanwhile raises Conflict."""
    tool = registry.write_tool(held.tool_name)
    fields = {
        **{name: getattr(held, name) for name in _CARRIED},
        "tool_use_id": "",
        "approval_of_id": held.pk,
    }
    savepoint = transaction.savepoint()
    try:
        row = _new_row(fields, locked, status=ToolInvocation.Status.COMMITTED)
        event_seq = _run(tool, held_call_context(held, locked), row, after=locked.event_seq)
        _append(row, locked, event_seq=event_seq)
    except ToolFailed as failure:
        transaction.savepoint_rollback(savepoint)
        row = _new_row(fields, locked, status=ToolInvocation.Status.FAILED, error=str(failure))
        _append(row, locked, event_seq=locked.event_seq, check_turn=False)
        if isinstance(failure, ToolRefused):
            _record_refusal(row, failure, ip=None)
    else:
        transaction.savepoint_commit(savepoint)
    return row


def held_call_context(held: ToolInvocation, locked: Campaign) -> ToolContext:
    """The context a held call runs (or is previewed again) in: its turn's, with the powers it
    was asked with, as they stand now (a co-GM demoted meanwhile no longer has the GM's)."""
    powers = _powers(locked, caller=held.requested_by or held.user, source=held.source)
    return ToolContext(campaign=locked, actor=held.user, turn=held.turn, powers=powers)


# What the approved call's row takes over from the held one.
_CARRIED = (
    "campaign_id",
    "user_id",
    "requested_by_id",
    "turn",
    "tool_name",
    "tool_tier",
    "input",
    "model",
    "source",
)


def _caller_if_not_actor(requested_by: Any, actor: Any) -> int | None:
    if requested_by is None or requested_by.pk == actor.pk:
        return None
    return requested_by.pk


def _new_row(fields: dict[str, Any], locked: Campaign, **extra: Any) -> ToolInvocation:
    """The log row, not yet written: next in the campaign's chain, as the locked campaign row's
    log head says (every writer of the log keeps it current under the same lock)."""
    return ToolInvocation(
        sequence=locked.log_sequence + 1,
        prev_hash=locked.log_head,
        created_at=timezone.now(),
        **fields,
        **extra,
    )


def _append(
    row: ToolInvocation, locked: Campaign, *, event_seq: int, check_turn: bool = True
) -> None:
    """Write the complete row, sealed, with its write/read-set entries and the campaign's new
    log head and event number. Fail-closed: if this fails, the transaction rolls back with the
    tool's mutation (AuditLogFailure). One statement, which with `check_turn` also checks that
    the row's turn, if it has one, was not undone: no call joins an undone turn. The campaign
    lock is held, which undo holds too, and a statement started now sees any undo committed
    before the lock was taken: then Conflict, and nothing stays."""
    seal(row)
    check_turn = check_turn and row.turn_id is not None
    undone = False
    try:
        sql, params = log_append_sql(row, event_seq=event_seq, check_turn=check_turn)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            if check_turn:
                undone = bool(cursor.fetchone()[0])
    except Exception as exc:
        logger.exception("audit log insert failed for %s", row.tool_name)
        raise AuditLogFailure() from exc
    if undone:
        raise Conflict(UNDONE)
    locked.log_sequence, locked.log_head = row.sequence, row.row_hash
    locked.event_seq = locked.drawn_seq = event_seq


UNDONE = "This turn has been undone; no more tool calls can join it."


def _record_failed(
    fields: dict[str, Any], error: str, *, refusal: ToolRefused | None = None, ip: str | None = None
) -> ToolInvocation:
    """The `failed` row, in a transaction of its own; a refusal's security event with it."""
    with transaction.atomic(durable=True):
        locked = campaign_lock(fields["campaign_id"])
        row = _new_row(fields, locked, status=ToolInvocation.Status.FAILED, error=error)
        _append(row, locked, event_seq=locked.event_seq)
        if refusal is not None:
            _record_refusal(row, refusal, ip=ip)
        return row


def _record_refusal(row: ToolInvocation, refusal: ToolRefused, *, ip: str | None) -> None:
    """Who tried (the caller: the person who posted it, else the turn's actor), on what."""
    SecurityEvent.objects.create(
        kind=SecurityEvent.Kind.TOOL_CALL_DENIED,
        user_id=row.requested_by_id or row.user_id,
        campaign_id=row.campaign_id,
        target=refusal.target,
        ip=ip,
        detail={"message": str(refusal), "invocation": str(row.pk), "tool": row.tool_name},
    )


def _run(tool: WriteTool, ctx: ToolContext, row: ToolInvocation, *, after: int) -> int:
    """Run the tool and fill in the row; the campaign's last event number after its events."""
    data = row.input
    guarded(tool, tool.authorize, ctx, data)
    keys = guarded(tool, tool.write_set, ctx, data)
    reads = guarded(tool, tool.read_set, ctx, data)
    snapshot, snapshot_error = _take_snapshot(tool, ctx, data, keys)
    result = guarded(tool, tool.apply, ctx, data)
    written = keys + [k for k in ctx.created if k not in keys]
    if snapshot is not None and "entities" in snapshot:
        for created in ctx.created:
            snapshot["entities"].setdefault(created, None)
    post_state = entities.capture_many(ctx.campaign, written, rows=ctx.written_rows())
    return _commit(
        row,
        result=result,
        snapshot=snapshot,
        snapshot_error=snapshot_error,
        post_state=post_state,
        reads=reads,
        after=after,
        fog_in_play=_fog_after(ctx.campaign, post_state),
    )


def _fog_after(locked: Campaign, post_state: dict) -> bool | None:
    """Whether the fog is in play as this call commits, known without a read: as the campaign
    lock found it (`campaign_lock`), unless this call wrote a fog cell; then, and for any later
    call in the same transaction (a redo runs several), it is unknown (None) and is read."""
    if any(entities.parse(key)[0] == "fog" for key in post_state):
        locked.fog_in_play = None
    return getattr(locked, "fog_in_play", None)


def _take_snapshot(
    tool: WriteTool, ctx: ToolContext, data: dict, keys: list[str]
) -> tuple[dict | None, str]:
    """Fail-open: a broken snapshot costs the undo, not the turn. When the snapshot reads the
    database, a savepoint keeps a failed query from aborting the transaction the tool still
    has to run in; the default snapshot of rows the call has already read runs no query, and
    needs none."""
    try:
        if _from_loaded_rows(tool, ctx, keys):
            return tool.snapshot(ctx, data, keys), ""
        with transaction.atomic():
            return tool.snapshot(ctx, data, keys), ""
    except Exception as exc:
        if is_unavailable(exc):
            raise  # an outage costs the call (fail-closed), not silently its undo
        logger.exception("snapshot capture failed for %s", tool.name)
        return None, f"Snapshot capture failed ({type(exc).__name__}: {exc}); not revertible."


def _from_loaded_rows(tool: WriteTool, ctx: ToolContext, keys: list[str]) -> bool:
    """Whether the tool's snapshot is the default one and every key's row is already loaded."""
    if getattr(tool.snapshot, "__func__", None) is not WriteTool.snapshot:
        return False
    rows = ctx.loaded_rows()
    return all(entities.in_rows(k, rows) for k in keys)


def _event_source(origin: str) -> Source:
    """A person's own call (the page's GM hand) broadcasts as `user`; the GM's and the REST
    tool-call endpoint's as `ai_tool_execution` (docs/api.md#the-live-feed-websocket)."""
    if origin == InvocationOrigin.USER:
        return Source.USER
    return Source.AI_TOOL_EXECUTION


def _commit(
    row: ToolInvocation,
    *,
    result: dict,
    snapshot: dict | None,
    snapshot_error: str,
    post_state: dict,
    reads: list[str],
    after: int,
    fog_in_play: bool | None,
) -> int:
    """Fill in the committed row; its events are numbered after `after` and leave after
    commit (`fog_in_play`: as `_fog_after` knows it). Returns the campaign's new last event
    number."""
    row.result = result
    row.revert_snapshot = snapshot
    row.revertible = snapshot is not None
    row.error = snapshot_error
    row.post_state = post_state
    row.write_set = list(post_state)
    row.read_set = reads
    row.committed_at = timezone.now()
    events = [
        event(
            StateChanged(**entities.describe(k, fields)),
            source=_event_source(row.source),
            turn=row.turn_id,
            invocation=row.pk,
        )
        for k, fields in post_state.items()
    ]
    row.broadcast_events = broadcast_on_commit(
        row.campaign_id, events, after=after, fog_in_play=fog_in_play
    )
    return after + len(events)


def redone_call_run(
    original: ToolInvocation, locked: Campaign, *, turn: Turn, by: Any
) -> ToolInvocation:
    """Run an undone call again, exactly as it was asked (the same tool, input, model, source,
    actor and tool_use id), as a new row at the log's tip in `turn`, made by `by`
    (`requested_by` when that is not the actor): the redo of its turn
    (`audit.services.redo`). Through the dispatch's own steps, with the powers the call had (the
    GM's for the GM's call) and without asking for approval again: it puts back what already
    ran. Assumes the campaign lock, in the caller's transaction; a refusal or a tool error
    raises ToolFailed, and the caller's transaction rolls back whole."""
    tool = registry.write_tool(original.tool_name)
    fields = {
        **{name: getattr(original, name) for name in _CARRIED},
        "turn": turn,
        "requested_by_id": _caller_if_not_actor(by, original.user),
        "tool_use_id": original.tool_use_id,
    }
    caller = by if fields["requested_by_id"] else original.user
    powers = _powers(locked, caller=caller, source=original.source)
    ctx = ToolContext(
        campaign=locked,
        actor=original.user,
        turn=turn,
        powers=powers,
        tool_use_id=original.tool_use_id,
    )
    row = _new_row(fields, locked, status=ToolInvocation.Status.COMMITTED)
    event_seq = _run(tool, ctx, row, after=locked.event_seq)
    _append(row, locked, event_seq=event_seq, check_turn=False)
    return row
