"""Filling the invocation log for benchmarks, fast and valid: rows built in Python, numbered,
linked and sealed by the log's own functions (so `verify_log` finds every chain intact and the
dispatch appends to it as to a real log), and streamed to PostgreSQL with COPY."""

import json
import time
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

BATCH = 20_000


def log_append(rows: Iterable[Any]) -> None:
    """Append unsaved `ToolInvocation`s, in order, as the dispatch would: each takes its
    campaign's next sequence number and links to its predecessor's hash. Every concrete field is
    written as the row holds it (`created_at` too, so callers can date their rows)."""
    from audit.services.common import chain_position

    heads: dict[Any, tuple[int, str]] = {}
    iterator = iter(rows)
    while batch := list(islice(iterator, BATCH)):
        for campaign_id in {row.campaign_id for row in batch} - heads.keys():
            heads[campaign_id] = chain_position(campaign_id)  # before the COPY holds the line
        _copy(_chained(batch, heads))
    from campaigns.models import Campaign

    for campaign_id, (following, head) in heads.items():  # the log head, as the dispatch keeps it
        Campaign.objects.filter(pk=campaign_id).update(log_sequence=following - 1, log_head=head)


def _chained(batch: list[Any], heads: dict[Any, tuple[int, str]]) -> Iterator[Any]:
    from audit.chain import seal

    for row in batch:
        row.sequence, row.prev_hash = heads[row.campaign_id]
        seal(row)
        heads[row.campaign_id] = (row.sequence + 1, row.row_hash)
        yield row


def _copy(rows: Iterable[Any]) -> None:
    """Every concrete field, JSON as text for PostgreSQL to parse and the rest as psycopg adapts
    it natively (Django's per-field preparation gives the same values, slower by a minute or so
    at a million rows)."""
    from django.db import connection
    from django.db.models import JSONField

    from audit.models import ToolInvocation

    fields = ToolInvocation._meta.concrete_fields
    is_json = [isinstance(field, JSONField) for field in fields]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    statement = f"COPY {ToolInvocation._meta.db_table} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            values = [getattr(row, field.attname) for field in fields]
            copy.write_row(
                [
                    json.dumps(value) if as_json and value is not None else value
                    for value, as_json in zip(values, is_json, strict=True)
                ]
            )


def log_verify() -> None:
    """Walk every campaign's chain with `manage.py verify_log`; a broken link raises, so a
    benchmark whose log no longer matches the chain's rules fails instead of measuring it."""
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("verify_log")
    print(f"(verify_log walked the whole log in {time.perf_counter() - started:.1f} s)")
