"""Concurrency against PostgreSQL: the campaign lock and row locks make revert exactly-once and
keep a revert racing a new tool call consistent."""

from typing import Any

import pytest

from audit.models import InvocationOrigin, ToolInvocation
from audit.services import UndoResult, invocation_dispatch, invocation_revert, turn_undo
from campaigns.models import Creature
from core.errors import Conflict
from tests.conftest import all_at_once, build_world

pytestmark = pytest.mark.django_db(transaction=True)


def test_twenty_concurrent_reverts_of_one_row_revert_exactly_once():
    world = build_world()
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        tool_name="modify_creature",
        input={"creature_id": world.goblin.pk, "hp_delta": -5},
        source=InvocationOrigin.GM,
    )

    def revert() -> Any:
        return invocation_revert(
            campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.player
        )

    outcomes = all_at_once(*[revert] * 20)
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert sum(o.reverted for o in outcomes) == 1
    assert sorted(o.skip_reason for o in outcomes if not o.reverted) == ["already_reverted"] * 19
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7
    assert ToolInvocation.objects.get(pk=row.pk).status == "reverted"


def test_revert_racing_a_new_call_on_the_same_creature_stays_consistent():
    world = build_world()
    for round_ in range(8):
        Creature.objects.filter(pk=world.orc.pk).update(hp=15)
        first = invocation_dispatch(
            campaign=world.campaign,
            actor=world.owner,
            tool_name="modify_creature",
            input={"creature_id": world.orc.pk, "hp_delta": -4},
        )

        def revert(first: ToolInvocation = first) -> Any:
            return invocation_revert(
                campaign_id=world.campaign.pk, invocation_id=first.pk, user=world.owner
            )

        def hit() -> Any:
            return invocation_dispatch(
                campaign=world.campaign,
                actor=world.owner,
                tool_name="modify_creature",
                input={"creature_id": world.orc.pk, "hp_delta": -3},
            )

        reverted, second = all_at_once(revert, hit)
        assert isinstance(second, ToolInvocation) and second.status == "committed", round_
        hp = Creature.objects.get(pk=world.orc.pk).hp
        first.refresh_from_db()
        if isinstance(reverted, Conflict):
            # The new hit committed first: the revert was refused and both hits stand.
            assert reverted.conflicts == [str(second.pk)]
            assert (first.status, hp) == ("committed", 15 - 4 - 3)
        else:
            # The revert committed first: the new hit landed on the restored creature.
            assert reverted.reverted and first.status == "reverted"
            assert hp == 15 - 3
            assert second.revert_snapshot["entities"][f"creature:{world.orc.pk}/vitals"]["hp"] == 15


def test_undo_racing_a_call_into_the_same_turn_never_leaves_a_committed_call_behind():
    world = build_world()
    for round_ in range(8):
        turn = world.turn()
        invocation_dispatch(
            campaign=world.campaign,
            actor=world.player,
            turn=turn,
            tool_name="move_token",
            input={"creature_id": world.hero.pk, "x": round_, "y": 1},
        )

        def undo(turn=turn) -> Any:
            return turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)

        def late_call(turn=turn) -> Any:
            return invocation_dispatch(
                campaign=world.campaign,
                actor=world.player,
                turn=turn,
                tool_name="modify_creature",
                input={"creature_id": world.goblin.pk, "hp_delta": -1},
                source=InvocationOrigin.GM,
            )

        undone, called = all_at_once(undo, late_call)
        assert isinstance(undone, UndoResult), undone
        statuses = set(ToolInvocation.objects.filter(turn=turn).values_list("status", flat=True))
        assert statuses == {"reverted"}, round_
        if isinstance(called, Conflict):  # the undo came first: the call was refused
            assert len(undone.reverted) == 1
        else:  # the call came first: the undo reverted it too
            assert called.status == "committed" and len(undone.reverted) == 2
        assert Creature.objects.get(pk=world.goblin.pk).hp == 7
