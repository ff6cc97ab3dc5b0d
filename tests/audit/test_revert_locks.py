"""Revert and undo read what they change under row locks (docs/architecture.md#revert-and-undo:
`select_for_update` the row(s) and lock the campaign), so two concurrent reverts of one call
serialise and exactly one of them reverts.

The race tests prove it; these pin the locks themselves. Each SELECT the revert compiles is
captured with its `select_for_update` flag and its SQL, which must say FOR UPDATE. Dropping any
of the `select_for_update` calls fails a test here."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

import pytest
from django.db import connection
from django.db.models.sql.compiler import SQLCompiler
from django.db.models.sql.query import Query

from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch, invocation_revert, turn_undo

pytestmark = pytest.mark.django_db

INVOCATIONS, TURNS, CAMPAIGNS = "audit_toolinvocation", "campaigns_turn", "campaigns_campaign"


@dataclass
class Select:
    table: str
    locked: bool
    sql: str


@contextmanager
def compiled_selects() -> Iterator[list[Select]]:
    """Every plain SELECT compiled inside the block, in order."""
    seen: list[Select] = []
    original = SQLCompiler.as_sql

    def note(query: Query, sql: str) -> None:
        if type(query) is Query and query.model is not None:
            seen.append(Select(query.model._meta.db_table, bool(query.select_for_update), sql))

    def spy(self, *args, **kwargs):
        sql, params = original(self, *args, **kwargs)
        note(self.query, sql)
        return sql, params

    with mock.patch.object(SQLCompiler, "as_sql", spy):
        yield seen


def first(selects: list[Select], table: str) -> Select:
    return next(s for s in selects if s.table == table)


def assert_locked(select: Select) -> None:
    assert select.locked, f"{select.table} read without select_for_update: {select.sql}"
    assert "FOR UPDATE" in select.sql, select.sql


def hit(world, turn, delta: int) -> ToolInvocation:
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        turn=turn,
        tool_name="modify_creature",
        input={"creature_id": world.goblin.pk, "hp_delta": delta},
        source=InvocationOrigin.GM,
    )
    assert row.status == ToolInvocation.Status.COMMITTED
    return row


def test_revert_locks_the_campaign_then_its_row_and_the_cascade(world):
    row = hit(world, world.turn(), -1)
    hit(world, world.turn(), -2)  # a later call on the same goblin: reverted by the cascade
    with compiled_selects() as selects:
        invocation_revert(
            campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner, cascade=True
        )
    assert selects[0].table == CAMPAIGNS  # lock order: campaign first, then rows
    assert_locked(selects[0])
    rows_read = [s for s in selects if s.table == INVOCATIONS]
    assert_locked(rows_read[0])  # the row being reverted
    assert_locked(rows_read[1])  # the later rows the cascade reverts
    assert ToolInvocation.objects.filter(status="reverted").count() == 2


def test_undo_locks_the_campaign_the_turn_and_the_turns_rows(world):
    turn = world.turn()
    hit(world, turn, -1)
    hit(world, turn, -2)
    with compiled_selects() as selects:
        turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    assert selects[0].table == CAMPAIGNS
    assert_locked(selects[0])
    assert_locked(first(selects, TURNS))
    turn_column = connection.ops.quote_name(ToolInvocation._meta.get_field("turn").column)
    of_the_turn = [s for s in selects if s.table == INVOCATIONS and turn_column in s.sql]
    assert len(of_the_turn) == 1, selects  # all its calls, the held ones among them, at once
    for select in of_the_turn:
        assert_locked(select)
    assert ToolInvocation.objects.filter(status="reverted").count() == 2
