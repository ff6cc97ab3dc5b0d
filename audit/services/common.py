"""Pieces shared by dispatch and revert."""

from typing import Any

from django.db import connection

from ai_tools import entities
from audit.chain import chain_tip
from audit.models import ToolInvocation, WriteSetEntry
from campaigns.models import Campaign, Turn


def campaign_lock(campaign_id: Any) -> Campaign:
    """Lock the campaign row: tool calls and reverts of one campaign run one at a time, across
    processes. Every writer takes this lock first, so lock order is always campaign → rows.
    The row holds the log head and the last event number, so the lock also reads them."""
    campaign = entities.select_row(Campaign, campaign_id, lock=True)
    if campaign is None:
        raise Campaign.DoesNotExist(f"no campaign {campaign_id}")
    return campaign


def chain_position(campaign_id: Any) -> tuple[int, str]:
    """The next log sequence number and the hash it links to (the chain's last link: a row or
    a transition after it), read from the log itself. Assumes the campaign lock."""
    tip = chain_tip(campaign_id)
    return tip.sequence + 1, tip.hash


def log_append_sql(
    row: ToolInvocation, *, event_seq: int, check_turn: bool
) -> list[tuple[str, list[Any]]]:
    """The statements that append a complete, sealed row to the log: the row, its write-set and
    read-set entries (`WriteSetEntry`, which conflict detection reads), and the campaign's new
    log head and last event number; with `check_turn`, last, whether the row's turn was undone
    (one boolean column). On PostgreSQL all of it is one statement (data-modifying CTEs);
    elsewhere one statement each."""
    quote = connection.ops.quote_name
    statements = [_insert([row], ToolInvocation._meta.concrete_fields)]
    entries = [
        WriteSetEntry(
            campaign_id=row.campaign_id,
            invocation_id=row.pk,
            sequence=row.sequence,
            root=entities.root(k),
            key=k,
            mode=mode,
        )
        for mode, keys in (
            (WriteSetEntry.Mode.WRITE, row.write_set),
            (WriteSetEntry.Mode.READ, row.read_set),
        )
        for k in keys
    ]
    if entries:
        fields = [f for f in WriteSetEntry._meta.concrete_fields if not f.primary_key]
        statements.append(_insert(entries, fields))
    campaign = Campaign._meta
    statements.append(
        (
            f"UPDATE {quote(campaign.db_table)} SET log_sequence = %s, log_head = %s, "
            f"event_seq = %s WHERE {quote(campaign.pk.column)} = %s",
            [row.sequence, row.row_hash, event_seq, _prep(campaign.pk, row.campaign_id)],
        )
    )
    if check_turn:
        turns = Turn._meta
        statements.append(
            (
                f"SELECT EXISTS (SELECT 1 FROM {quote(turns.db_table)} WHERE "
                f"{quote(turns.pk.column)} = %s AND reverted_at IS NOT NULL)",
                [row.turn_id],
            )
        )
    if connection.vendor != "postgresql":
        return statements
    writes = [
        f"w{i} AS ({sql})"
        for i, (sql, _) in enumerate(statements[:-1] if check_turn else statements)
    ]
    last = statements[-1][0] if check_turn else "SELECT 1"
    params = [p for _, ps in statements for p in ps]
    return [(f"WITH {', '.join(writes)} {last}", params)]


def _prep(field: Any, value: Any) -> Any:
    return field.get_db_prep_save(value, connection)


def _insert(objs: list[Any], fields: list[Any]) -> tuple[str, list[Any]]:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    values = ", ".join([one] * len(objs))
    sql = f"INSERT INTO {quote(objs[0]._meta.db_table)} ({columns}) VALUES {values}"
    return sql, [_prep(f, getattr(obj, f.attname)) for obj in objs for f in fields]
