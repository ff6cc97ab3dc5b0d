"""Fog of war hides for real (issue 21, point 3): what a person may see is decided once, per
viewer, and every part of the campaign page draws from that decision — the map, the rosters,
the combat tracker, the forms' choices, the feed and the undo dialog. A player's page holds no
name, position or HP of a foe standing in the fog, its aria-labels included; the GM (the owner,
a co-GM) sees through it, the token labelled as hidden from the players."""

import re
from typing import Any

import pytest
from django.test import Client

from audit.models import InvocationOrigin
from campaigns.models import Turn
from tests.conftest import World, commit, fog_over_the_goblin, held_hit, signed_in

pytestmark = pytest.mark.django_db

DEEP = (14, 11)  # an unrevealed cell far off: a GM's grid grows to hold it, a player's does not


def gm_turn_in_the_dark(world: World) -> Turn:
    """The player's turn in which the GM moves the hidden goblin deeper into the fog and hits
    it (HP 7 → 5)."""
    turn = world.turn(world.player, "I sneak ahead.")
    x, y = DEEP
    for tool, data in (
        ("move_token", {"creature_id": world.goblin.pk, "x": x, "y": y}),
        ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -2}),
    ):
        commit(world, tool, data, turn=turn, source=InvocationOrigin.GM)
    return turn


@pytest.fixture
def dark(world: World) -> Turn:
    fog_over_the_goblin(world)
    return gm_turn_in_the_dark(world)


def secrets(world: World) -> list[str]:
    """What of the hidden goblin a player's page must not hold: its name, its id where the page
    names creatures by id, its position as the page writes positions."""
    pk = world.goblin.pk
    return ["Goblin", f'data-creature="{pk}"', "14,11", 'data-x="14"']


def get(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response.content.decode()


def page(world: World, user: Any, tail: str = "") -> str:
    return get(signed_in(user), f"/campaigns/{world.campaign.pk}/{tail}")


def leaked(world: World, html: str) -> list[str]:
    return [secret for secret in secrets(world) if secret in html]


def tokens(html: str) -> dict[str, dict[str, str]]:
    """Each map token's attributes by creature name."""
    found = {}
    for tag in re.findall(r'<g class="map-token [^>]*>', html):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        found[attrs["data-name"]] = attrs
    return found


def creature_choices(html: str) -> list[str]:
    """The creatures the forms' selects offer (`<template data-options="creatures">`)."""
    choices = re.search(r'<template data-options="creatures">(.*?)</template>', html, re.S)[1]
    return re.findall(r'<option value="\d+">([^<]*)</option>', choices)


def roster(html: str, key: str) -> list[str]:
    section = re.search(rf'data-part="roster-{key}">(.*?)</section>', html, re.S)[1]
    return re.findall(r'<span class="name">([^<]*)</span>', section)


@pytest.mark.parametrize("who", ["player", "other"])
@pytest.mark.parametrize("tail", ["", "board/", "feed/"])
def test_a_players_page_board_and_feed_hold_nothing_of_a_foe_in_the_fog(
    world: World, dark: Turn, who: str, tail: str
):
    html = page(world, getattr(world, who), tail)
    assert leaked(world, html) == []
    if tail != "feed/":  # the visible foe is drawn as before, on the map and in the roster
        assert set(tokens(html)) == {"Thorin", "Lia", "Orc"}
        assert roster(html, "foes") == ["Orc"]
    if tail == "board/":  # the choices the page's selects are refilled with
        assert creature_choices(html) == ["Thorin", "Lia", "Orc"]


def test_a_players_grid_is_the_campaigns_and_says_nothing_of_a_token_beyond_it(
    world: World, dark: Turn
):
    """The grid is the GM's (16 × 10 by default); only a token the GM's tool put beyond it
    (the goblin at 14,11) widens the GM's drawing: never a player's, who does not see it."""
    grid = r'data-cols="(\d+)" data-rows="(\d+)"'
    assert re.search(grid, page(world, world.player)).groups() == ("16", "10")
    assert re.search(grid, page(world, world.owner)).groups() == ("16", "12")


@pytest.mark.parametrize("who", ["owner", "cogm"])
def test_the_gm_sees_through_the_fog_with_the_token_marked_as_hidden(
    world: World, dark: Turn, who: str
):
    html = page(world, getattr(world, who))
    goblin = tokens(html)["Goblin"]
    assert goblin["aria-label"] == "Goblin at 14,11, HP 5 of 7, hidden from the players by fog"
    assert "in-fog" in goblin["class"] and (goblin["data-x"], goblin["data-y"]) == ("14", "11")
    assert roster(html, "foes") == ["Goblin", "Orc"]
    assert "Goblin moves from 5,5 to 14,11" in html and "Goblin takes 2 damage (7 → 5)" in html


def test_a_players_feed_says_something_happened_in_the_fog_and_no_more(world: World, dark: Turn):
    html = page(world, world.player, f"feed/?turn={dark.pk}")
    summaries = re.findall(r'<span class="summary">(.*?)</span>', html)
    assert summaries == ["Something happens in the fog", "Something happens in the fog"]
    assert leaked(world, html) == []


def test_the_combat_tracker_names_a_hidden_combatant_for_the_gm_only(world: World, dark: Turn):
    commit(world, "start_combat", {"creature_ids": [world.goblin.pk, world.hero.pk]})
    combatants = r'<span class="combatant">([^<]*)</span>'
    player = page(world, world.player, "board/")
    assert re.findall(combatants, player) == ["Someone unseen", "Thorin"]
    assert leaked(world, player) == []
    assert "Combat starts: Someone unseen and Thorin" not in player  # no turn: not in the feed
    assert re.findall(combatants, page(world, world.owner, "board/")) == ["Goblin", "Thorin"]


def test_a_foe_that_steps_out_of_the_fog_is_seen_and_its_way_through_the_fog_is_not(
    world: World, dark: Turn
):
    turn = world.turn(world.player, "I wait.")
    commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 3, "y": 3}, turn=turn)
    html = page(world, world.player)
    assert tokens(html)["Goblin"]["aria-label"] == "Goblin at 3,3, HP 5 of 7"
    assert roster(html, "foes") == ["Goblin", "Orc"]
    assert "Goblin moves to 3,3" in html
    # Seen now, its HP no longer a secret; where it went inside the fog still is.
    assert "14,11" not in html and "Goblin takes 2 damage (7 → 5)" in html


def test_without_a_revealed_cell_fog_is_not_in_play_and_hides_nothing(world: World):
    gm_turn_in_the_dark(world)
    html = page(world, world.player)
    assert set(tokens(html)) == {"Thorin", "Lia", "Goblin", "Orc"}
    assert "Goblin moves from 5,5 to 14,11" in html


def test_a_players_undo_dialog_names_no_hidden_foe(world: World, dark: Turn):
    plan = page(world, world.player, f"undo-plan/?turn={dark.pk}")
    assert "Something happens in the fog" in plan
    assert leaked(world, plan) == [] and "7 → 5" not in plan and "5 → 7" not in plan
    owner = page(world, world.owner, f"undo-plan/?turn={dark.pk}")
    assert "Goblin moves from 5,5 to 14,11" in owner and "Goblin hp: 5 → 7" in owner


@pytest.mark.parametrize("who", ["player", "other"])
def test_a_players_approval_card_tells_of_a_held_call_on_a_hidden_foe_and_no_more(
    world: World, dark: Turn, who: str
):
    held_hit(world, world.player)
    html = page(world, getattr(world, who), "approvals/")
    assert "Waiting for approval: Something happens in the fog" in html
    assert leaked(world, html) == [] and "<code>hp</code>" not in html
    owner = page(world, world.owner, "approvals/")
    assert "Goblin takes 5 damage (5 → 0)" in owner
    assert "<td><code>hp</code></td><td><code>5</code></td><td><code>0</code></td>" in owner
