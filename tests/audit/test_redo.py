"""Redo: an undone turn put back exactly, as new log rows in a new turn, only if nothing it wrote
changed since (docs/architecture.md#rewind-and-redo)."""

from dataclasses import dataclass

import pytest
from django.db import transaction

from ai_tools import registry
from ai_tools.base import ToolError
from audit.chain import verify
from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from audit.services import turn_rewind, turn_undo
from audit.services.hand import hand_call
from audit.services.redo import turn_redo
from campaigns.models import DiceRoll, Turn
from campaigns.services import dice_roll_record
from core.errors import Conflict, Diverged, Forbidden
from tests.conftest import World, commit, dump, narrate

pytestmark = pytest.mark.django_db


@dataclass
class GMTurn:
    turn: Turn
    before: str  # the world before the turn
    produced: str  # ... and as the turn left it
    rows: list[ToolInvocation]


def gm_turn(world: World, actor=None) -> GMTurn:
    """The player attacks: the GM rolls 1d20 (a 17), narrates, hits the goblin for 4 and moves
    the player's PC beside it."""
    actor = actor or world.player
    before = dump(world.campaign)
    turn = world.turn(actor, "I charge the goblin.")
    dice_roll_record(
        campaign=world.campaign,
        author=None,
        formula="1d20+3",
        mode="normal",
        dice=[17],
        discarded=[],
        modifier=3,
        total=20,
        turn=turn,
        by_gm=True,
        tool_use_id="toolu_roll",
    )
    rows = [
        commit(
            world,
            "modify_creature",
            {"creature_id": world.goblin.pk, "hp_delta": -4},
            actor=actor,
            turn=turn,
            model="scripted/1",
            tool_use_id="toolu_hit",
        ),
        commit(
            world,
            "move_token",
            {"creature_id": world.hero.pk, "x": 4, "y": 5},
            actor=actor,
            turn=turn,
            model="scripted/1",
            tool_use_id="toolu_move",
        ),
    ]
    narrate(turn, "A 20 hits: the goblin reels.")
    Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.COMPLETED)
    turn.refresh_from_db()
    return GMTurn(turn, before, dump(world.campaign), rows)


def undo(world, turn, user=None):
    return turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=user or world.owner)


def redo(world, turn, user=None, **kwargs):
    return turn_redo(
        campaign_id=world.campaign.pk, turn_id=turn.pk, user=user or world.owner, **kwargs
    )


def test_redo_restores_exactly_the_state_the_turn_had_produced(world):
    played = gm_turn(world)
    undo(world, played.turn)
    assert dump(world.campaign) == played.before
    redone = redo(world, played.turn, user=world.player)
    assert dump(world.campaign) == played.produced
    assert (redone.redo_of, redone.actor, redone.status) == (played.turn, world.player, "completed")
    # The same calls with the same inputs, as new rows of the log, in the new turn.
    again = list(ToolInvocation.objects.filter(turn=redone).order_by("sequence"))
    assert [(r.tool_name, r.input, r.model, r.source, r.tool_use_id) for r in again] == [
        (r.tool_name, r.input, r.model, r.source, r.tool_use_id) for r in played.rows
    ]
    assert {r.status for r in again} == {"committed"}
    assert min(r.sequence for r in again) > max(r.sequence for r in played.rows)
    assert [r.post_state for r in again] == [r.post_state for r in played.rows]
    # The requester is on record: the player asked for it on their own turn (no one else).
    assert {r.requested_by_id for r in again} == {None}
    # The messages and the GM's dice as they were.
    assert [(m.role, m.content) for m in redone.messages.order_by("pk")] == [
        ("player", "I charge the goblin."),
        ("gm", "A 20 hits: the goblin reels."),
    ]
    roll = DiceRoll.objects.get(turn=redone)
    assert (roll.formula, roll.dice, roll.total, roll.by_gm) == ("1d20+3", [17], 20, True)
    # The original stays undone, its rows reverted.
    played.turn.refresh_from_db()
    assert played.turn.reverted_at is not None
    assert {r.status for r in ToolInvocation.objects.filter(turn=played.turn)} == {"reverted"}


def test_a_redone_turn_is_undone_like_any(world):
    played = gm_turn(world)
    undo(world, played.turn)
    redone = redo(world, played.turn)
    undo(world, redone)
    assert dump(world.campaign) == played.before
    again = redo(world, redone)
    assert dump(world.campaign) == played.produced
    assert again.redo_of == redone


def test_redo_after_something_changed_is_a_conflict_saying_what_and_changes_nothing(world):
    played = gm_turn(world)
    undo(world, played.turn)
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1})
    changed = dump(world.campaign)
    log = list(ToolInvocation.objects.values_list("pk", "status"))
    with pytest.raises(Diverged) as diverged:
        redo(world, played.turn)
    assert diverged.value.changes == [
        {"entity": "creature", "id": str(world.goblin.pk), "field": "hp", "was": 7, "now": 6}
    ]
    assert "hp is 6, not 7" in diverged.value.detail
    assert dump(world.campaign) == changed
    assert list(ToolInvocation.objects.values_list("pk", "status")) == log
    assert not Turn.objects.filter(redo_of=played.turn).exists()


def test_redo_is_all_or_nothing_when_a_call_fails_on_the_way(world, monkeypatch):
    played = gm_turn(world)
    undo(world, played.turn)
    tool = registry.write_tool("move_token")  # the second call

    def broken(ctx, data):
        raise ToolError("The map is gone.")

    monkeypatch.setattr(tool, "apply", broken)
    log = list(ToolInvocation.objects.values_list("pk", "status"))
    with pytest.raises(Conflict):
        redo(world, played.turn)
    assert dump(world.campaign) == played.before
    assert list(ToolInvocation.objects.values_list("pk", "status")) == log
    assert not Turn.objects.filter(redo_of=played.turn).exists()
    assert not DiceRoll.objects.filter(turn__redo_of=played.turn).exists()


def test_only_an_undone_turn_is_redone_and_only_once(world):
    played = gm_turn(world)
    with pytest.raises(Conflict, match="Only an undone turn"):
        redo(world, played.turn)
    undo(world, played.turn)
    redo(world, played.turn)
    with pytest.raises(Conflict, match="already been redone"):
        redo(world, played.turn)


def test_a_member_who_may_not_revert_the_turn_may_not_redo_it_recorded(world):
    played = gm_turn(world)
    undo(world, played.turn)
    with pytest.raises(Forbidden):
        redo(world, played.turn, user=world.other, ip="10.0.0.9")
    event = SecurityEvent.objects.get()
    assert (event.kind, event.user, event.target) == (
        "revert_denied",
        world.other,
        f"turn:{played.turn.pk}",
    )
    assert dump(world.campaign) == played.before
    assert not Turn.objects.filter(redo_of=played.turn).exists()


def test_a_hand_turn_is_redone_as_the_persons_own_hand(world):
    before = dump(world.campaign)
    row = hand_call(
        campaign=world.campaign,
        by=world.owner,
        tool_name="modify_creature",
        input={"creature_id": world.orc.pk, "hp_delta": -3},
    )
    produced = dump(world.campaign)
    undo(world, row.turn)
    assert dump(world.campaign) == before
    redone = redo(world, row.turn, user=world.cogm)
    assert dump(world.campaign) == produced
    again = ToolInvocation.objects.get(turn=redone)
    assert (again.source, again.user, again.requested_by) == (
        InvocationOrigin.USER,
        world.owner,
        world.cogm,
    )


def test_after_a_rewind_of_three_turns_the_first_is_redone_exactly(world):
    first = gm_turn(world)
    second = gm_turn(world, actor=world.other)
    third_turn = world.turn(world.player, "I hide.")
    commit(
        world,
        "move_token",
        {"creature_id": world.hero.pk, "x": 0, "y": 0},
        actor=world.player,
        turn=third_turn,
    )
    turn_rewind(campaign_id=world.campaign.pk, turn_id=first.turn.pk, user=world.owner)
    assert dump(world.campaign) == first.before
    redo(world, first.turn)
    assert dump(world.campaign) == first.produced
    redo(world, second.turn)
    assert dump(world.campaign) == second.produced


def test_redo_refuses_to_run_inside_another_transaction(world):
    played = gm_turn(world)
    undo(world, played.turn)
    with pytest.raises(RuntimeError), transaction.atomic():
        redo(world, played.turn)


def test_the_log_chain_still_verifies_after_a_rewind_and_a_redo(world):
    first = gm_turn(world)
    gm_turn(world, actor=world.other)
    turn_rewind(campaign_id=world.campaign.pk, turn_id=first.turn.pk, user=world.owner)
    redo(world, first.turn)
    assert verify(world.campaign.pk) is None


def test_a_turn_that_made_something_anew_is_not_put_back_under_another_id(world):
    """A spawned creature comes back with a new id: not the turn as it was, so nothing stays."""
    turn = world.turn(world.player, "Who goes there?")
    commit(
        world,
        "spawn_creature",
        {"name": "Skeleton", "kind": "monster", "hp": 13, "x": 3, "y": 4},
        actor=world.player,
        turn=turn,
    )
    undo(world, turn)
    before, log = dump(world.campaign), list(ToolInvocation.objects.values_list("pk", "status"))
    with pytest.raises(Conflict, match="would not write what it wrote the first time"):
        redo(world, turn)
    assert dump(world.campaign) == before
    assert list(ToolInvocation.objects.values_list("pk", "status")) == log
