"""The map on the campaign page, drawn by the server (`_map_grid.html`, the one renderer): each
creature's token at its x,y with its HP ring and label, the fog from the revealed cells (seen
through by the GM), the active combatant, and which tokens this person may drag, by the rule the
move's service enforces (`Rights.moves`, `may_act_on`)."""

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.staticfiles import finders

from tests.conftest import World, commit, signed_in


def page(world: World, user: Any) -> str:
    response = signed_in(user).get(f"/campaigns/{world.campaign.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def tokens(html: str) -> dict[str, dict[str, str]]:
    """Each token's attributes by creature name."""
    found = {}
    for tag in re.findall(r'<g class="map-token [^>]*>', html):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        attrs["hidden"] = str(" hidden>" in tag)
        found[attrs["data-name"]] = attrs
    return found


def test_the_page_holds_one_map_drawn_by_the_server_with_its_own_styles(world: World):
    html = page(world, world.player)
    assert html.count('id="map"') == 1
    assert '<svg class="map-grid" data-part="map" role="group" aria-label="Battle map"' in html
    assert '<link rel="stylesheet" href="/static/css/map.css">' in html
    assert html.index('id="scene"') < html.index('id="map"') < html.index('id="combat"')
    assert len(tokens(html)) == 4


def test_each_token_stands_at_its_creatures_cell_and_fog_hides_unrevealed_foes(world: World):
    commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 6, "y": 3})
    commit(world, "reveal_fog", {"cells": [[0, 0], [1, 1]]})
    drawn = tokens(page(world, world.player))
    at = {name: (t["data-x"], t["data-y"], t["style"]) for name, t in drawn.items()}
    assert at["Thorin"] == ("1", "1", "transform: translate(40px, 40px)")
    assert "Goblin" not in drawn  # in the fog: a player's map has no token for it
    assert drawn["Orc"]["hidden"] == "False"  # at 0,0: revealed
    assert drawn["Thorin"]["aria-label"] == "Thorin at 1,1, HP 20 of 24, your character"
    assert drawn["Thorin"]["class"] == "map-token kind-pc band-ok movable"
    owner = tokens(page(world, world.owner))
    assert at["Orc"] == (owner["Orc"]["data-x"], owner["Orc"]["data-y"], owner["Orc"]["style"])
    goblin = owner["Goblin"]  # the GM sees through the fog
    assert (goblin["data-x"], goblin["data-y"], goblin["style"]) == (
        "6",
        "3",
        "transform: translate(240px, 120px)",
    )
    assert goblin["hidden"] == "False" and "in-fog" in goblin["class"]
    assert goblin["aria-label"].endswith("hidden from the players by fog")


@pytest.mark.parametrize(
    ("who", "runs_table"),
    [("owner", True), ("cogm", True), ("player", False), ("other", False)],
)
def test_the_owner_and_co_gms_drag_any_token_players_only_their_own_pc(
    world: World, who: str, runs_table: bool
):
    user = getattr(world, who)
    html = page(world, user)
    help_text = "Drag any token" if runs_table else "Drag your character’s token"
    assert help_text in html
    movable = {name for name, t in tokens(html).items() if t["aria-disabled"] == "false"}
    mine = {"player": {"Thorin"}, "other": {"Lia"}}
    assert movable == ({"Thorin", "Lia", "Goblin", "Orc"} if runs_table else mine[who])
    for name, token in tokens(html).items():
        assert ("data-refusal" in token) == (name not in movable)


def test_the_active_combatant_is_marked_and_its_ring_shows_its_hp(world: World):
    commit(world, "start_combat", {"creature_ids": [world.goblin.pk, world.hero.pk]})
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5})
    html = page(world, world.owner)
    active = [name for name, t in tokens(html).items() if t.get("aria-current") == "true"]
    assert len(active) == 1 and "active" in tokens(html)[active[0]]["class"]
    goblin = re.search(r'data-name="Goblin".*?stroke-dasharray="([\d.]+) ([\d.]+)"', html, re.S)
    assert float(goblin[1]) / float(goblin[2]) == pytest.approx(2 / 7, abs=0.001)


@pytest.mark.parametrize("path", ["css/map.css", "js/table/map.js"])
def test_the_maps_assets_load_nothing_from_elsewhere(path: str):
    source = Path(finders.find(path)).read_text(encoding="utf-8")
    assert not re.search(r"https?://|@import|url\(\s*['\"]?//", source)
    imports = re.findall(r'^import .* from "([^"]+)";$', source, re.M)
    assert all(module.startswith("./") for module in imports)
