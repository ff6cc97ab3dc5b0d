"""Fault injection: fail-closed on the log, fail-open on the snapshot, atomic on tool errors."""

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services import invocation_dispatch, invocation_revert
from campaigns.models import Campaign, Creature, ResourceEvent
from core.errors import AuditLogFailure
from tests.conftest import dump
from tests.infra.faults import database_drops_at


def test_log_insert_failure_rolls_the_tool_call_back(world):
    """The row is written after `apply`, in the dispatch's one transaction: when it cannot be
    written, the mutation already made rolls back with it (fail-closed: no row, no change)."""
    before = dump(world.campaign)
    with (
        CaptureQueriesContext(connection) as queries,
        database_drops_at(
            'INSERT INTO "audit_toolinvocation"', message="disk full", raise_as=DatabaseError
        ) as struck,
        pytest.raises(AuditLogFailure) as caught,
    ):
        invocation_dispatch(
            campaign=world.campaign,
            actor=world.owner,
            tool_name="modify_creature",
            input={"creature_id": world.goblin.pk, "hp_delta": -5},
        )
    assert struck, "the fault must strike the log row's insert"
    assert any('UPDATE "campaigns_creature"' in q["sql"] for q in queries), "the tool had run"
    assert caught.value.detail == "Internal audit-log failure. Please retry."
    assert dump(world.campaign) == before
    assert not ToolInvocation.objects.exists()
    assert Campaign.objects.get(pk=world.campaign.pk).log_sequence == 0


def test_snapshot_failure_still_runs_the_tool_but_it_cannot_be_reverted(world, monkeypatch):
    tool = registry.write_tool("modify_creature")

    def broken_snapshot(ctx, data, keys):
        raise RuntimeError("snapshot store unavailable")

    monkeypatch.setattr(tool, "snapshot", broken_snapshot)
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.owner,
        tool_name="modify_creature",
        input={"creature_id": world.goblin.pk, "hp_delta": -5},
    )
    monkeypatch.undo()
    assert row.status == "committed" and row.revertible is False
    assert row.revert_snapshot is None
    assert "Snapshot capture failed" in row.error
    assert Creature.objects.get(pk=world.goblin.pk).hp == 2
    outcome = invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
    )
    assert (outcome.reverted, outcome.skip_reason) == (False, "not_revertible")
    assert Creature.objects.get(pk=world.goblin.pk).hp == 2


def test_snapshot_database_error_does_not_poison_the_transaction(world, monkeypatch):
    tool = registry.write_tool("move_token")

    def failing_query(ctx, data, keys):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM no_such_table")
        return {}

    monkeypatch.setattr(tool, "snapshot", failing_query)
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.owner,
        tool_name="move_token",
        input={"creature_id": world.goblin.pk, "x": 9, "y": 9},
    )
    assert row.status == "committed" and not row.revertible
    assert Creature.objects.get(pk=world.goblin.pk).x == 9


def test_tool_raising_midway_leaves_nothing_of_its_mutation(world, monkeypatch):
    tool = registry.write_tool("rest")
    original = ResourceEvent.objects.create
    calls = []

    def crash_on_second_event(**kwargs):
        calls.append(kwargs)
        if len(calls) == 2:
            raise RuntimeError("power cut")
        return original(**kwargs)

    world.hero.hp = 1
    world.hero.save()
    before = dump(world.campaign)
    monkeypatch.setattr(ResourceEvent.objects, "create", crash_on_second_event)
    row = invocation_dispatch(
        campaign=world.campaign, actor=world.owner, tool_name="rest", input={"kind": "long"}
    )
    monkeypatch.undo()
    assert len(calls) == 2, "the tool must have written before it crashed"
    assert row.status == "failed"
    assert row.error == "Internal error in tool rest (RuntimeError); nothing was changed."
    assert dump(world.campaign) == before
    assert ToolInvocation.objects.filter(status="committed").count() == 0
    assert tool is registry.write_tool("rest")
