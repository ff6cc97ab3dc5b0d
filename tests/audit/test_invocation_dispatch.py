"""The audited dispatch: one row per call, written with the mutation, broadcast after commit."""

import pytest
from django.db import transaction

from ai_tools import entities, registry
from audit import chain
from audit.models import InvocationOrigin, ToolInvocation, WriteSetEntry
from audit.services import invocation_dispatch, invocation_revert, turn_undo
from campaigns.models import Campaign, Creature
from core.errors import Conflict
from tests.ai_tools.examples import example_cases, example_input
from tests.conftest import rolled_back


def damage(world, amount=3, actor=None, **extra):
    return invocation_dispatch(
        campaign=world.campaign,
        actor=actor or world.owner,
        tool_name="modify_creature",
        input={"creature_id": world.goblin.pk, "hp_delta": -amount},
        **extra,
    )


def test_committed_row_records_everything_needed_to_audit_and_undo(world):
    turn = world.turn()
    row = damage(world, turn=turn, model="claude-test-1", source="gm")
    row.refresh_from_db()
    key = f"creature:{world.goblin.pk}/vitals"
    assert row.status == "committed"
    assert (row.user, row.turn, row.tool_name, row.tool_tier) == (
        world.owner,
        turn,
        "modify_creature",
        "critical",
    )
    assert (row.model, row.source) == ("claude-test-1", "gm")
    assert row.result["hp"] == 4 and row.result["hp_before"] == 7
    assert row.revert_snapshot["entities"][key]["hp"] == 7
    assert row.post_state[key]["hp"] == 4
    assert row.write_set == [key]
    assert row.committed_at is not None and row.revertible and row.error == ""
    assert list(WriteSetEntry.objects.filter(invocation=row).values_list("key", "mode")) == [
        (key, "w")
    ]


def test_sequence_numbers_rise_per_campaign_including_failed_rows(world):
    first = damage(world)
    failed = invocation_dispatch(
        campaign=world.campaign, actor=world.owner, tool_name="move_token", input={}
    )
    third = damage(world)
    assert [first.sequence, failed.sequence, third.sequence] == [1, 2, 3]
    other = invocation_dispatch(
        campaign=world.foreign.campaign,
        actor=world.outsider,
        tool_name="set_scene",
        input={"description": "Elsewhere"},
    )
    assert other.sequence == 1


def test_state_changes_are_broadcast_after_commit_with_ai_source(
    world, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        row = damage(world)
        assert events == []
    for callback in callbacks:
        callback()
    assert [e["type"] for e in events] == ["state_changed"]
    (sent,) = events
    assert sent["source"] == "ai_tool_execution"
    assert sent["invocation"] == str(row.pk)
    assert sent["campaign"] == str(world.campaign.pk)
    assert sent["data"]["entity"] == "creature" and sent["data"]["fields"]["hp"] == 4
    assert row.broadcast_events == [sent]


def test_a_persons_own_call_is_logged_as_user_and_broadcast_as_user(
    world, events, django_capture_on_commit_callbacks
):
    """The page's GM hand (docs/architecture.md#set-up-and-the-gms-hand): the same audited tool, its
    row marked `user`, its events sourced `user` so every browser can tell a person's change from
    the AI's."""
    with django_capture_on_commit_callbacks(execute=True):
        row = damage(world, source=InvocationOrigin.USER)
    assert row.status == ToolInvocation.Status.COMMITTED and row.source == "user"
    assert [e["source"] for e in events] == ["user"]
    assert row.broadcast_events[0]["source"] == "user"


def test_event_seq_rises_by_one_per_event(world, events, django_capture_on_commit_callbacks):
    world.campaign.refresh_from_db()
    last = world.campaign.event_seq  # setting the world up was announced too
    with django_capture_on_commit_callbacks(execute=True):
        damage(world)
        invocation_dispatch(
            campaign=world.campaign, actor=world.owner, tool_name="rest", input={"kind": "long"}
        )
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(last + 1, last + len(events) + 1)) and len(seqs) > 2


def test_failed_call_is_logged_and_broadcasts_nothing(
    world, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        row = invocation_dispatch(
            campaign=world.campaign, actor=world.owner, tool_name="advance_turn", input={}
        )
    assert row.status == "failed" and row.error == "There is no active combat."
    assert row.committed_at is None and row.result is None
    assert events == []
    assert not WriteSetEntry.objects.exists()


def test_failed_row_keeps_the_input_tier_and_actor(world):
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        tool_name="give_item",
        input={"creature_id": "x"},
    )
    row = ToolInvocation.objects.get(pk=row.pk)
    assert (row.tool_tier, row.user, row.input) == ("medium", world.player, {"creature_id": "x"})
    assert row.error.startswith("Invalid input: ")


def test_spawned_creature_is_in_the_write_set(world):
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.owner,
        tool_name="spawn_creature",
        input={"name": "Rat", "kind": "monster", "hp": 2},
    )
    created = Creature.objects.get(name="Rat")
    assert row.write_set == [f"creature:{created.pk}"]
    assert row.revert_snapshot["entities"] == {f"creature:{created.pk}": None}


def test_no_call_joins_an_undone_turn(world):
    turn = world.turn()
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    for data in ({"creature_id": world.goblin.pk, "hp_delta": -1}, {"creature_id": "bad"}):
        with pytest.raises(Conflict, match="This turn has been undone"):
            invocation_dispatch(
                campaign=world.campaign,
                actor=world.player,
                turn=turn,
                tool_name="modify_creature",
                input=data,
            )
    assert not ToolInvocation.objects.exists()
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7


@pytest.mark.parametrize(
    ("tool_name", "input"),
    [
        ("modify_creature", lambda w: {"creature_id": w.goblin.pk, "hp_delta": -3}),  # runs
        ("modify_creature", lambda w: {"hp_delta": "lots"}),  # invalid: would be a failed row
        ("summon_dragon", lambda w: {}),  # unknown: would be a failed row
    ],
)
def test_dispatch_refuses_to_run_inside_another_transaction(world, tool_name, input):
    with pytest.raises(RuntimeError, match="durable"), transaction.atomic():
        invocation_dispatch(
            campaign=world.campaign, actor=world.owner, tool_name=tool_name, input=input(world)
        )
    assert not ToolInvocation.objects.exists()
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7


@pytest.mark.parametrize("tool_name,index", example_cases())
def test_the_recorded_states_are_what_the_database_held(world, tool_name, index):
    """The snapshot is taken from the rows the call already read and the post-state from what
    its writes returned (no query of their own): each must equal reading the entity from the
    database, before the call and after it, and the row as stored must equal the row the
    dispatch returned and sealed."""
    tool = registry.write_tool(tool_name)
    data = example_input(world, tool, index)
    row = invocation_dispatch(
        campaign=world.campaign, actor=world.owner, tool_name=tool_name, input=data
    )
    assert row.status == "committed", row.error
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    before = entities.snapshot_map(row.revert_snapshot)
    for key, fields in row.post_state.items():
        assert fields == entities.capture(campaign, key), key
    with rolled_back():
        invocation_revert(campaign_id=campaign.pk, invocation_id=row.pk, user=world.owner)
        for key, fields in before.items():
            assert fields == entities.capture(campaign, key), key
    stored = ToolInvocation.objects.get(pk=row.pk)
    assert chain.row_hash(stored, stored.prev_hash) == row.row_hash
    assert (campaign.log_sequence, campaign.log_head) == (row.sequence, row.row_hash)
    assert campaign.event_seq == row.broadcast_events[-1]["seq"]
