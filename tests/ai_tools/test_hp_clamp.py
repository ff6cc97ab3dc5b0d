"""modify_creature keeps HP between 0 and max_hp, whichever way it is asked: healing by
`hp_delta` or setting by `set_hp` above the maximum stops at the maximum."""

import pytest

from audit.services import invocation_dispatch, invocation_revert
from tests.conftest import World


def modify(world: World, creature, **change):
    return invocation_dispatch(
        campaign=world.campaign,
        actor=world.owner,
        tool_name="modify_creature",
        input={"creature_id": creature.pk, **change},
    )


@pytest.mark.parametrize(
    ("change", "hp"),
    [
        ({"hp_delta": 10}, 24),  # 20 + 10 heals past 24
        ({"hp_delta": 4}, 24),  # exactly to the maximum
        ({"hp_delta": 100_000}, 24),
        ({"set_hp": 30}, 24),
        ({"set_hp": 100_000}, 24),
        ({"set_hp": 24}, 24),
        ({"hp_delta": -100}, 0),
    ],
)
def test_hp_stays_between_zero_and_max_hp(world, change, hp):
    assert (world.hero.hp, world.hero.max_hp) == (20, 24)
    row = modify(world, world.hero, **change)
    assert row.status == "committed", row.error
    world.hero.refresh_from_db()
    assert world.hero.hp == hp
    assert row.result["hp"] == hp
    assert row.post_state[f"creature:{world.hero.pk}/vitals"]["hp"] == hp


def test_healing_at_full_hp_changes_nothing_and_reverts_to_the_same(world):
    row = modify(world, world.goblin, hp_delta=5)
    world.goblin.refresh_from_db()
    assert world.goblin.hp == world.goblin.max_hp == 7
    invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7


def test_a_heal_past_max_hp_reverts_to_the_hp_before(world):
    row = modify(world, world.hero, set_hp=500)
    invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    world.hero.refresh_from_db()
    assert world.hero.hp == 20
