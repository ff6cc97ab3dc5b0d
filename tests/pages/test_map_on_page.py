"""The map on the campaign page: its frame, and the facts its script draws the tokens from
(`static/js/map.js` is the one renderer): each creature at its x,y, the revealed fog cells, and
whether this person runs the table (drags any token) or drags only their own PC."""

import json
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


def table_data(html: str) -> dict[str, Any]:
    raw = re.search(r'<script id="table-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(raw.group(1))


def test_the_page_holds_one_map_drawn_by_its_module_with_its_own_styles(world: World):
    html = page(world, world.player)
    assert html.count('id="map"') == 1
    assert '<svg class="map-grid" role="group" aria-label="Battle map"' in html
    assert '<script type="module" src="/static/js/map.js"></script>' in html
    assert '<link rel="stylesheet" href="/static/css/map.css">' in html
    assert html.index('id="scene"') < html.index('id="map"') < html.index('id="combat"')


def test_the_map_is_drawn_from_each_creatures_position_and_the_revealed_fog(world: World):
    commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 6, "y": 3})
    commit(world, "reveal_fog", {"cells": [[0, 0], [1, 1], [6, 3]]})
    state = table_data(page(world, world.player))["state"]
    positions = {c["name"]: (c["kind"], c["x"], c["y"]) for c in state["creatures"]}
    assert positions == {
        "Thorin": ("pc", 1, 1),
        "Lia": ("pc", 2, 1),
        "Goblin": ("monster", 6, 3),
        "Orc": ("monster", 0, 0),
    }
    # Each revealed cell with its id, so an undone reveal_fog (a deleted row) is drawn live.
    assert [(cell["x"], cell["y"]) for cell in state["fog"]] == [(0, 0), (1, 1), (6, 3)]
    assert all(isinstance(cell["id"], int) for cell in state["fog"])


@pytest.mark.parametrize(
    ("who", "runs_table"),
    [("owner", True), ("cogm", True), ("player", False), ("other", False)],
)
def test_the_owner_and_co_gms_drag_any_token_players_only_their_own_pc(
    world: World, who: str, runs_table: bool
):
    user = getattr(world, who)
    html = page(world, user)
    assert table_data(html)["map"] == {"gm": runs_table, "user": user.pk}
    help_text = "Drag any token" if runs_table else "Drag your character’s token"
    assert help_text in html
    controlled = {c["id"]: c["controlled_by_id"] for c in table_data(html)["state"]["creatures"]}
    assert controlled[world.hero.pk] == world.player.pk
    assert controlled[world.ally.pk] == world.other.pk


@pytest.mark.parametrize("path", ["css/map.css", "js/map.js"])
def test_the_maps_assets_load_nothing_from_elsewhere(path: str):
    source = Path(finders.find(path)).read_text(encoding="utf-8")
    source = source.replace('"http://www.w3.org/2000/svg"', "")  # a namespace name, not a fetch
    assert not re.search(r"https?://|@import|url\(\s*['\"]?//", source)
    imports = re.findall(r'^import .* from "([^"]+)";$', source, re.M)
    assert all(module.startswith("./") for module in imports)
