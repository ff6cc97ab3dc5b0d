"""Pieces shared by dispatch, preview and revert."""

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.dispatch import Signal

from ai_tools import entities
from ai_tools.base import ToolError, ToolForbidden, WriteTool
from audit.chain import chain_tip
from audit.models import ToolInvocation, WriteSetEntry
from campaigns.models import Campaign, FogCell, Turn
from core.faults import is_unavailable

logger = logging.getLogger("audit.services.dispatch")
T = TypeVar("T")


# Sent by the dispatch, in its transaction under the campaign lock, when it holds a call for
# approval (`row`, `expires_at`). The log's task module schedules the expiry on it
# (audit/tasks.py, connected in AuditConfig.ready): the job answers through the approval service,
# which runs approved calls through the dispatch, so the dispatch does not import the job.
call_held = Signal()


class ToolFailed(Exception):
    """The tool refused or broke; its mutation is rolled back and a `failed` row is written."""


class ToolRefused(ToolFailed):
    """Least privilege refused the call (`ToolForbidden`): a failed row and a security event."""

    def __init__(self, message: str, *, target: str) -> None:
        super().__init__(message)
        self.target = target


def guarded(tool: WriteTool, method: Callable[..., T], *args: Any) -> T:
    """Run a tool method; its refusals and crashes become `ToolFailed`, which rolls back the
    whole dispatch transaction (so no savepoint is needed here)."""
    try:
        return method(*args)
    except ToolForbidden as exc:
        raise ToolRefused(str(exc), target=exc.target) from exc
    except ToolError as exc:
        raise ToolFailed(str(exc)) from exc
    except Exception as exc:
        if is_unavailable(exc):
            raise  # the database or channel layer is down: not the tool's fault
        logger.exception("tool %s raised", tool.name)
        raise ToolFailed(
            f"Internal error in tool {tool.name} ({type(exc).__name__}); nothing was changed."
        ) from exc


def campaign_lock(campaign_id: Any) -> Campaign:
    """Lock the campaign row: tool calls and reverts of one campaign run one at a time, across
    processes. Every writer takes this lock first, so lock order is always campaign → rows.
    The row holds the log head and the last event number, so the lock also reads them, and
    in the same statement whether the fog is in play (`fog_in_play`: any cell revealed).
    Every writer of the fog holds this lock, so until the holder writes a fog cell itself
    that stays true for its whole transaction: a call that writes none knows, with no read,
    that players may see all of its events (`campaigns.realtime.broadcast_on_commit`)."""
    locked = entities.select_row(Campaign, campaign_id, lock=True, flags=_FOG)
    if locked is None:
        raise Campaign.DoesNotExist(f"No campaign {campaign_id}.")
    return locked


_FOG = (
    f", EXISTS (SELECT 1 FROM {FogCell._meta.db_table} f "
    f"WHERE f.campaign_id = {Campaign._meta.db_table}.id) AS fog_in_play"
)


def chain_position(campaign_id: Any) -> tuple[int, str]:
    """The next log sequence number and the hash it links to (the chain's last link: a row or
    a transition after it), read from the log itself. Assumes the campaign lock."""
    tip = chain_tip(campaign_id)
    return tip.sequence + 1, tip.hash


def log_append_sql(row: ToolInvocation, *, event_seq: int, check_turn: bool) -> tuple[str, list]:
    """The statement that appends a complete, sealed row to the log: the row, its write-set and
    read-set entries (`WriteSetEntry`, which conflict detection reads), and the campaign's new
    log head and last event number; with `check_turn`, whether the row's turn was undone (one
    boolean column). Raw SQL because the ORM cannot say it: data-modifying CTEs make it one
    statement, where the ORM's inserts, update and check take four round trips on the
    dispatch's hot path. The text is made once per shape."""
    db = connections[DEFAULT_DB_ALIAS]  # once: each use of the `connection` proxy looks it up
    campaign_id = _prep(Campaign._meta.pk, row.campaign_id, db)
    invocation_id = _prep(ToolInvocation._meta.pk, row.pk, db)
    entries = [
        (campaign_id, invocation_id, row.sequence, entities.root(k), k, mode)
        for mode, keys in (
            (WriteSetEntry.Mode.WRITE.value, row.write_set),
            (WriteSetEntry.Mode.READ.value, row.read_set),
        )
        for k in keys
    ]
    params = [
        *(_prep(f, getattr(row, f.attname), db) for f in ToolInvocation._meta.concrete_fields),
        *(value for entry in entries for value in entry),
        *(row.sequence, row.row_hash, event_seq, event_seq, campaign_id),
        *([row.turn_id] if check_turn else []),
    ]
    return _append_sql(len(entries), check_turn), params


@functools.cache
def _append_sql(entries: int, check_turn: bool) -> str:
    """The text of `log_append_sql` for a row with this many entries."""
    quote = connection.ops.quote_name
    fields = ToolInvocation._meta.concrete_fields
    entry_fields = [f for f in WriteSetEntry._meta.concrete_fields if not f.primary_key]
    campaign, turns = Campaign._meta, Turn._meta
    writes = [
        _insert_sql(ToolInvocation._meta.db_table, fields, 1),
        _insert_sql(WriteSetEntry._meta.db_table, entry_fields, entries) if entries else "",
        f"UPDATE {quote(campaign.db_table)} SET log_sequence = %s, log_head = %s, "
        f"event_seq = %s, drawn_seq = %s WHERE {quote(campaign.pk.column)} = %s",
    ]
    check = (
        f"SELECT EXISTS (SELECT 1 FROM {quote(turns.db_table)} WHERE "
        f"{quote(turns.pk.column)} = %s AND reverted_at IS NOT NULL)"
        if check_turn
        else "SELECT 1"
    )
    ctes = ", ".join(f"w{i} AS ({text})" for i, text in enumerate(writes) if text)
    return f"WITH {ctes} {check}"


def _prep(field: Any, value: Any, db: Any) -> Any:
    """A value as the ORM sends it for this field to `db` (plain strings, integers, booleans and
    nulls of plain columns as they are)."""
    if (value is None or type(value) in (str, int, bool)) and field in _plain_fields():
        return value
    return field.get_db_prep_save(value, db)


@functools.cache
def _plain_fields() -> frozenset[Any]:
    """Fields that send a str, int, bool or None unchanged (not JSON, not a uuid, not a date)."""
    plain = (models.CharField, models.TextField, models.IntegerField, models.BooleanField)
    return frozenset(
        f
        for model in (ToolInvocation, WriteSetEntry, Campaign)
        for f in model._meta.concrete_fields
        if isinstance(f.target_field if f.is_relation else f, plain)
        and not isinstance(f.target_field if f.is_relation else f, models.JSONField)
    )


def _insert_sql(table: str, fields: list[Any], rows: int) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return f"INSERT INTO {quote(table)} ({columns}) VALUES {', '.join([one] * rows)}"
