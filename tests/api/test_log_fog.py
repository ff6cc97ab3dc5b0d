"""The log's API under fog: a player reading `GET …/invocations/` (a page or one row) learns
that a call ran, never what it did to a creature the fog hides — its input, result, error and
preview are withheld and `concealed` says so — as the feed and the approval card read it
(`audit.selectors.calls_concealed`). The GM reads every row whole."""

import pytest

from audit.models import ToolInvocation
from tests.api.conftest import campaign_url, client_for
from tests.conftest import World, commit, fog_over_the_goblin, held_hit

pytestmark = pytest.mark.django_db


def rows(world: World, user) -> dict[str, dict]:
    response = client_for(user).get(campaign_url(world, "invocations/"))
    assert response.status_code == 200
    return {row["id"]: row for row in response.json()["results"]}


def one(world: World, user, row: ToolInvocation) -> dict:
    response = client_for(user).get(campaign_url(world, f"invocations/{row.pk}/"))
    assert response.status_code == 200
    return response.json()


@pytest.fixture
def dark(world: World) -> dict[str, ToolInvocation]:
    """Fog over the goblin; then the goblin moves in the fog, a monster is spawned in it, the
    hero moves in the open."""
    fog_over_the_goblin(world)
    return {
        "goblin_moves": commit(
            world, "move_token", {"creature_id": world.goblin.pk, "x": 9, "y": 9}
        ),
        "spawned": commit(
            world, "spawn_creature", {"name": "Lurker", "kind": "monster", "hp": 5, "x": 8, "y": 8}
        ),
        "hero_moves": commit(world, "move_token", {"creature_id": world.hero.pk, "x": 3, "y": 3}),
    }


@pytest.mark.parametrize("who", ["player", "other"])
def test_a_player_reads_that_a_hidden_call_ran_not_what_it_did(world: World, dark, who: str):
    seen = rows(world, getattr(world, who))
    for hidden in ("goblin_moves", "spawned"):
        row = seen[str(dark[hidden].pk)]
        assert row["concealed"] is True
        assert (row["input"], row["result"], row["error"], row["preview"]) == ({}, None, "", None)
        assert row["tool_name"] == dark[hidden].tool_name and row["status"] == "committed"
        assert one(world, getattr(world, who), dark[hidden]) == row
    open_row = seen[str(dark["hero_moves"].pk)]
    assert open_row["concealed"] is False
    assert open_row["input"] == {"creature_id": world.hero.pk, "x": 3, "y": 3}


@pytest.mark.parametrize("who", ["owner", "cogm"])
def test_the_gm_reads_every_row_whole(world: World, dark, who: str):
    seen = rows(world, getattr(world, who))
    for row in dark.values():
        got = seen[str(row.pk)]
        assert got["concealed"] is False and got["input"] == row.input
    assert one(world, getattr(world, who), dark["goblin_moves"])["input"]["x"] == 9


def test_without_fog_nothing_is_concealed(world: World):
    row = commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 9, "y": 9})
    assert one(world, world.player, row)["input"]["x"] == 9


def test_a_held_call_on_a_hidden_creature_keeps_its_preview_from_players(world: World):
    fog_over_the_goblin(world)
    held = held_hit(world, world.player)
    assert held.status == ToolInvocation.Status.AWAITING_APPROVAL
    assert one(world, world.player, held)["preview"] is None
    assert one(world, world.owner, held)["preview"]["diff"]
