"""`GET …/state/` under fog (issue 21, point 3): a player gets the canonical dump without the
creatures the fog hides from them (nor their resources, items and resource events, nor their
names in the combat order); the GM — the owner, a co-GM, audit staff — gets the canonical dump
itself, and so does everyone while no cell has been revealed."""

import pytest

from campaigns.models import Resource
from campaigns.selectors import campaign_state
from campaigns.services import resource_create
from tests.api.conftest import campaign_url, client_for
from tests.conftest import World, commit, fog_over_the_goblin

pytestmark = pytest.mark.django_db


@pytest.fixture
def dark(world: World) -> None:
    """The goblin in the fog with an item, a resource it spent and a place in the combat."""
    resource_create(
        campaign=world.campaign,
        creature=world.goblin,
        by=world.owner,
        name="rage",
        current=2,
        maximum=2,
        recharge=Resource.Recharge.NONE,
    )
    commit(world, "give_item", {"creature_id": world.goblin.pk, "item": "gem", "quantity": 1})
    commit(
        world, "consume_resource", {"creature_id": world.goblin.pk, "resource": "rage", "amount": 1}
    )
    commit(world, "start_combat", {"creature_ids": [world.goblin.pk, world.hero.pk]})
    fog_over_the_goblin(world)
    commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 9, "y": 9})


def state(world: World, user) -> dict:
    response = client_for(user).get(campaign_url(world, "state/"))
    assert response.status_code == 200
    return response.json()


def canonical(world: World) -> dict:
    world.campaign.refresh_from_db()
    return {"seq": world.campaign.event_seq, **campaign_state(world.campaign)}


@pytest.mark.parametrize("who", ["player", "other"])
def test_a_player_gets_the_dump_without_what_the_fog_hides(world: World, dark, who: str):
    full, seen = canonical(world), state(world, getattr(world, who))
    goblin = world.goblin.pk
    rage = next(r["id"] for r in full["resources"] if r["creature_id"] == goblin)
    assert [c["id"] for c in seen["creatures"]] == [
        c["id"] for c in full["creatures"] if c["id"] != goblin
    ]
    assert seen["resources"] == [r for r in full["resources"] if r["creature_id"] != goblin]
    assert seen["items"] == [i for i in full["items"] if i["creature_id"] != goblin]
    assert seen["resource_events"] == [
        e for e in full["resource_events"] if e["resource_id"] != rage
    ]
    assert full["encounters"][0]["order"][0]["creature_id"] == goblin
    assert [slot["creature_id"] for slot in seen["encounters"][0]["order"]] == [
        None,
        world.hero.pk,
    ]
    rest = {"creatures", "resources", "items", "resource_events", "encounters"}
    assert {k: v for k, v in seen.items() if k not in rest} == {
        k: v for k, v in full.items() if k not in rest
    }


@pytest.mark.parametrize("who", ["owner", "cogm", "staff"])
def test_the_gm_gets_the_canonical_dump_itself(world: World, dark, staff, who: str):
    user = staff if who == "staff" else getattr(world, who)
    assert state(world, user) == canonical(world)


def test_a_foe_out_of_the_fog_is_in_a_players_dump_again(world: World, dark):
    commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 3, "y": 3})
    assert state(world, world.player) == canonical(world)


def test_a_player_character_is_seen_wherever_it_stands(world: World, dark):
    commit(world, "move_token", {"creature_id": world.hero.pk, "x": 12, "y": 12})
    hero = next(c for c in state(world, world.other)["creatures"] if c["id"] == world.hero.pk)
    assert (hero["x"], hero["y"]) == (12, 12)
