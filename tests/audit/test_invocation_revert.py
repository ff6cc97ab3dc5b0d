"""Revert and undo: exact, idempotent, conflict-aware, and told to every client."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from audit.chain import Tip, chain_tip
from audit.models import StatusTransition, ToolInvocation
from audit.services import (
    invocation_dispatch,
    invocation_revert,
    invocation_revert_plan,
    turn_undo,
    turn_undo_plan,
)
from campaigns.models import ChatMessage, Creature, Turn
from core.errors import Conflict
from tests.conftest import commit, dump


def revert(world, row, user=None, **kwargs):
    return invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=user or world.owner, **kwargs
    )


def test_revert_records_who_when_and_why(world):
    row = commit(
        world,
        "modify_creature",
        {"creature_id": world.hero.pk, "set_hp": 0, "add_conditions": ["dead"]},
        actor=world.player,
    )
    outcome = revert(world, row, user=world.player, reason="wrong target")
    row.refresh_from_db()
    assert outcome.reverted and outcome.skip_reason is None
    assert (row.status, row.reverted_by, row.revert_reason) == (
        "reverted",
        world.player,
        "wrong target",
    )
    assert row.reverted_at is not None
    hero = Creature.objects.get(pk=world.hero.pk)
    assert (hero.hp, hero.conditions) == (20, [])


def test_second_revert_reports_already_reverted(world):
    row = commit(world, "move_token", {"creature_id": world.hero.pk, "x": 7, "y": 7})
    assert revert(world, row).reverted
    again = revert(world, row)
    assert (again.reverted, again.skip_reason) == (False, "already_reverted")


def test_failed_row_reports_not_committed(world):
    row = invocation_dispatch(
        campaign=world.campaign, actor=world.owner, tool_name="end_combat", input={}
    )
    outcome = revert(world, row)
    assert (outcome.reverted, outcome.skip_reason) == (False, "not_committed")


def test_later_write_to_the_same_entity_is_a_conflict(world):
    first = commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -2})
    second = commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -3})
    before = dump(world.campaign)
    with pytest.raises(Conflict) as caught:
        revert(world, first)
    assert caught.value.conflicts == [str(second.pk)]
    assert dump(world.campaign) == before
    assert ToolInvocation.objects.get(pk=first.pk).status == "committed"


def test_independent_facets_do_not_conflict(world):
    damage = commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -2})
    commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 0, "y": 0})
    assert revert(world, damage).reverted
    goblin = Creature.objects.get(pk=world.goblin.pk)
    assert (goblin.hp, goblin.x) == (7, 0)


def test_cascade_reverts_later_dependents_newest_first(world):
    start = dump(world.campaign)
    spawn = commit(world, "spawn_creature", {"name": "Wolf", "kind": "monster", "hp": 9})
    wolf = spawn.result["creature_id"]
    hit = commit(world, "modify_creature", {"creature_id": wolf, "hp_delta": -4})
    fight = commit(world, "start_combat", {"creature_ids": [wolf, world.hero.pk]})
    with pytest.raises(Conflict) as caught:
        revert(world, spawn)
    assert set(caught.value.conflicts) == {str(hit.pk), str(fight.pk)}
    outcome = revert(world, spawn, cascade=True)
    assert outcome.reverted
    assert set(outcome.details["cascaded"]) == {str(hit.pk), str(fight.pk)}
    assert dump(world.campaign) == start
    assert set(ToolInvocation.objects.values_list("status", flat=True)) == {"reverted"}


def test_cascade_refuses_when_a_dependent_belongs_to_someone_the_user_may_not_revert(world):
    mine = commit(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -1},
        actor=world.player,
    )
    commit(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -1},
        actor=world.other,
    )
    from core.errors import Forbidden

    with pytest.raises(Forbidden):
        revert(world, mine, user=world.player, cascade=True)
    assert ToolInvocation.objects.filter(status="reverted").count() == 0


def test_undoing_a_turn_reads_the_turn_once_however_many_calls_it_has(world):
    """The turn is read once, locked; its calls' reverts run on it rather than each reading it
    again."""
    reads = {}
    for calls in (1, 3):
        turn = world.turn(message="I attack the goblin")
        for _ in range(calls):
            hit = {"creature_id": world.goblin.pk, "hp_delta": -1}
            commit(world, "modify_creature", hit, turn=turn)
        with CaptureQueriesContext(connection) as queries:
            outcome = turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner)
        assert len(outcome.reverted) == calls
        table = connection.ops.quote_name(Turn._meta.db_table)
        reads[calls] = [q["sql"] for q in queries if f"FROM {table}" in q["sql"]]
    assert [len(found) for found in reads.values()] == [1, 1], reads


def test_a_status_change_reads_the_chains_tip_in_one_statement(world):
    """The tip a transition links to is the log's last row, or the last transition chained
    after it: read together, in one statement, whichever it is."""
    row = commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1})
    tips = []
    for _ in range(2):  # the row itself, then the transition its revert chained after it
        with CaptureQueriesContext(connection) as queries:
            tips.append(chain_tip(world.campaign.pk))
        assert len(queries) == 1, [q["sql"] for q in queries]
        invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    link = StatusTransition.objects.get(invocation=row)
    assert tips == [
        Tip(row.sequence, 0, row.row_hash),
        Tip(row.sequence, link.ordinal, link.row_hash),
    ]
    assert link.prev_hash == row.row_hash and link.after_sequence == row.sequence


def test_undo_turn_reverts_all_its_calls_atomically_and_hides_its_messages(
    world, events, django_capture_on_commit_callbacks
):
    before = dump(world.campaign)
    turn = world.turn(message="I attack the goblin")
    rows = [
        commit(
            world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -3}, turn=turn
        ),
        commit(world, "set_scene", {"description": "Blood on the stones"}, turn=turn),
        commit(world, "reveal_fog", {"cells": [[4, 4]]}, turn=turn),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        outcome = turn_undo(
            campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player, reason="misread"
        )
    assert outcome.reverted == [str(r.pk) for r in reversed(rows)]
    assert outcome.skipped == []
    assert dump(world.campaign) == before
    turn.refresh_from_db()
    assert turn.reverted_by == world.player and turn.revert_reason == "misread"
    assert set(ChatMessage.objects.filter(turn=turn).values_list("reverted", flat=True)) == {True}
    (sent,) = [e for e in events if e["type"] == "interaction_reverted"]
    assert sent["source"] == "system" and sent["turn"] == turn.pk
    assert sent["data"]["tool_names"] == ["reveal_fog", "set_scene", "modify_creature"]
    goblin_state = [s for s in sent["data"]["state"] if s["entity"] == "creature"]
    assert goblin_state[0]["fields"]["hp"] == 7


def test_undoing_a_turn_twice_reports_each_call_already_reverted(world):
    turn = world.turn()
    rows = [
        commit(world, "move_token", {"creature_id": world.hero.pk, "x": i, "y": i}, turn=turn)
        for i in (2, 3)
    ]
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    again = turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    assert again.reverted == []
    assert again.skipped == [
        {"id": str(r.pk), "skip_reason": "already_reverted"} for r in reversed(rows)
    ]


def test_undo_turn_conflicting_with_a_later_turn_changes_nothing(world):
    turn = world.turn()
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1}, turn=turn)
    later_turn = world.turn(actor=world.other)
    later = commit(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -1},
        actor=world.other,
        turn=later_turn,
    )
    before = dump(world.campaign)
    with pytest.raises(Conflict) as caught:
        turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner)
    assert caught.value.conflicts == [str(later.pk)]
    assert dump(world.campaign) == before
    turn.refresh_from_db()
    assert turn.reverted_at is None


def test_revert_events_carry_the_restored_state(world, events, django_capture_on_commit_callbacks):
    row = commit(world, "set_scene", {"description": "Fog", "location": "Moor"})
    with django_capture_on_commit_callbacks(execute=True):
        revert(world, row, reason="typo")
    (sent,) = [e for e in events if e["type"] == "invocation_reverted"]
    assert sent["source"] == "system" and sent["invocation"] == str(row.pk)
    assert sent["data"]["state"] == [
        {
            "entity": "campaign",
            "id": str(world.campaign.pk),
            "facet": "scene",
            "fields": {"scene": "", "location": ""},
            "deleted": False,
        }
    ]


def test_plan_shows_before_after_now_and_changes_nothing(world):
    turn = world.turn()
    commit(
        world,
        "modify_creature",
        {"creature_id": world.hero.pk, "set_hp": 0, "add_conditions": ["dead"]},
        turn=turn,
    )
    before, log_before = dump(world.campaign), list(ToolInvocation.objects.values())
    plan = turn_undo_plan(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    assert dump(world.campaign) == before and list(ToolInvocation.objects.values()) == log_before
    assert [i["tool_name"] for i in plan["invocations"]] == ["modify_creature"]
    assert plan["conflicts"] == []
    diff = {d["field"]: d for d in plan["diff"]}
    assert (diff["hp"]["before"], diff["hp"]["after"], diff["hp"]["now"]) == (20, 0, 0)
    assert diff["conditions"]["before"] == [] and diff["conditions"]["now"] == ["dead"]


def test_plan_lists_conflicts_and_with_cascade_includes_them(world):
    first = commit(world, "give_item", {"creature_id": world.hero.pk, "item": "gem", "quantity": 1})
    second = commit(
        world, "give_item", {"creature_id": world.hero.pk, "item": "gem", "quantity": 2}
    )
    plan = invocation_revert_plan(
        campaign_id=world.campaign.pk, invocation_id=first.pk, user=world.owner
    )
    assert plan["conflicts"] == [str(second.pk)]
    cascade = invocation_revert_plan(
        campaign_id=world.campaign.pk, invocation_id=first.pk, user=world.owner, cascade=True
    )
    assert [i["id"] for i in cascade["invocations"]] == [str(second.pk), str(first.pk)]
    assert cascade["conflicts"] == []


def test_revert_and_undo_refuse_to_run_inside_another_transaction(world):
    turn = world.turn()
    row = commit(world, "move_token", {"creature_id": world.hero.pk, "x": 7, "y": 7}, turn=turn)
    with pytest.raises(RuntimeError, match="durable"), transaction.atomic():
        revert(world, row)
    with pytest.raises(RuntimeError, match="durable"), transaction.atomic():
        turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner)
    row.refresh_from_db()
    turn.refresh_from_db()
    assert (row.status, turn.reverted_at) == ("committed", None)
    assert (Creature.objects.get(pk=world.hero.pk).x, row.transitions.count()) == (7, 0)
