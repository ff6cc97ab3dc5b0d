"""Rewind and redo under concurrency, against PostgreSQL: the campaign lock makes each happen
once, and a rewind racing a new call leaves the world either side of it, never between."""

from typing import Any

import pytest

from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch, turn_rewind
from audit.services.redo import turn_redo
from campaigns.models import Turn
from core.errors import Conflict
from tests.audit.test_rewind import three_turns
from tests.conftest import all_at_once, build_world, dump

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_rewinds_of_one_table_rewind_it_once():
    world = build_world()
    table = three_turns(world)

    def rewind() -> Any:
        return turn_rewind(campaign_id=world.campaign.pk, turn_id=table.first.pk, user=world.owner)

    outcomes = all_at_once(*[rewind] * 6)
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    done = [o for o in outcomes if o.reverted]
    assert len(done) == 1 and len(done[0].reverted) == 4
    assert all(o.turns == [] for o in outcomes if o is not done[0])
    assert dump(world.campaign) == table.before
    assert ToolInvocation.objects.filter(status="reverted").count() == 4


def test_concurrent_redos_put_the_turn_back_once():
    world = build_world()
    table = three_turns(world)
    turn_rewind(campaign_id=world.campaign.pk, turn_id=table.first.pk, user=world.owner)

    def redo() -> Any:
        return turn_redo(campaign_id=world.campaign.pk, turn_id=table.first.pk, user=world.owner)

    outcomes = all_at_once(*[redo] * 6)
    assert len([o for o in outcomes if isinstance(o, Turn)]) == 1
    assert all(isinstance(o, Conflict) for o in outcomes if not isinstance(o, Turn)), outcomes
    assert Turn.objects.filter(redo_of=table.first).count() == 1


def test_a_rewind_racing_a_gm_call_in_a_rewound_turn_leaves_no_call_standing():
    world = build_world()
    table = three_turns(world)
    last = table.turns[-1]

    def rewind() -> Any:
        return turn_rewind(campaign_id=world.campaign.pk, turn_id=table.first.pk, user=world.owner)

    def hit() -> Any:
        return invocation_dispatch(
            campaign=world.campaign,
            actor=world.other,
            turn=last,
            tool_name="modify_creature",
            input={"creature_id": world.orc.pk, "hp_delta": -1},
            source=InvocationOrigin.GM,
        )

    outcomes = all_at_once(rewind, hit)
    assert not isinstance(outcomes[0], Exception), outcomes
    # Either the hit ran first and the rewind took it back, or it came after and was refused.
    assert isinstance(outcomes[1], Conflict) or outcomes[1].status == "committed"
    assert not ToolInvocation.objects.filter(turn=last, status="committed").exists()
    assert dump(world.campaign) == table.before
