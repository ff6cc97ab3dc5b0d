"""One renderer per fragment (docs/architecture.md#the-campaign-page-one-renderer-the-server):
the server's templates draw every fragment of the campaign page, and the page's scripts only
fetch fragments and swap them in. These tests fail when display logic grows a second copy in
the scripts: a mirrored helper, a label the templates own, a field of the game's state the
script would draw from, or markup built by hand; and they pin the board fragment the scripts swap
in to the page's own drawing."""

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from campaigns.selectors import campaign_state
from tests.conftest import World, commit, signed_in
from web.pages import presenters
from web.pages.board import ROSTERS

JS = Path(finders.find("js"))
SCRIPTS = {str(path.relative_to(JS)): path.read_text(encoding="utf-8") for path in JS.rglob("*.js")}

# Helpers and words the server's presenters own (web/pages/board.py, web/pages/presenters.py,
# the templates).
MIRRORS = [
    "hp_percent",
    "hpPercent",
    "hp_band",
    "hpBand",
    "ROSTERS",
    "with_names",
    "withNames",
    r"creatures\?",  # the creature-reference regex of `with_names`
    "initials",
    "played by",
    "Chapter ",
    "No fight right now",
    "Game Master",
    "hidden from the players by fog",
    "acting now",
    *(re.escape(text) for text in presenters.SKIPS.values()),
    *(re.escape(title) for _key, _kind, title in ROSTERS),
]


def state_fields(state: dict[str, Any]) -> set[str]:
    """The names of the state dump's fields: a script that reads one is drawing the game."""
    fields = set(state["campaign"])
    for rows in state.values():
        if isinstance(rows, list):
            for row in rows:
                fields |= set(row)
    return {name for name in fields if "_" in name} | {"hp", "conditions", "initiative"}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_no_script_mirrors_the_servers_display_helpers_or_words(name: str):
    source = SCRIPTS[name]
    found = [mirror for mirror in MIRRORS if re.search(mirror, source)]
    assert found == [], f"{name} mirrors the server's rendering: {found}"


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_no_script_reads_the_games_state(world: World, name: str):
    commit(world, "start_combat", {"creature_ids": [world.goblin.pk, world.hero.pk]})
    commit(world, "reveal_fog", {"cells": [[1, 1]]})
    fields = state_fields(campaign_state(world.campaign))
    assert {"current_chapter_id", "max_hp", "controlled_by_id", "turn_index"} <= fields
    found = sorted(field for field in fields if re.search(rf"\b{field}\b", SCRIPTS[name]))
    assert found == [], f"{name} draws from the state's fields: {found}"


def test_the_scripts_build_no_markup_but_a_fragment_parser_and_a_rolls_place_in_line():
    built = sorted(
        (name, match)
        for name, source in SCRIPTS.items()
        for match in re.findall(
            r"createElement(?:NS)?\(([^)]*)\)|innerHTML\s*=|insertAdjacentHTML", source
        )
    )
    assert built == [
        ("table/feed.js", '"li"'),
        ("table/http.js", ""),
        ("table/http.js", '"template"'),
    ]


def parts(html: str) -> dict[str, str]:
    """Each `data-part` element's opening tag, by name (its whole drawing is compared live in
    tests/browser/test_one_renderer.py)."""
    found = re.findall(r'(<[a-z]+ [^>]*data-part="([\w-]+)"[^>]*>)', html)
    return {name: tag for tag, name in found}


def test_the_board_fragment_draws_each_part_as_the_page_does(world: World):
    commit(world, "start_combat", {"creature_ids": [world.goblin.pk, world.hero.pk]})
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -3})
    client = signed_in(world.owner)
    page = client.get(f"/campaigns/{world.campaign.pk}/").content.decode()
    board = client.get(f"/campaigns/{world.campaign.pk}/board/")
    assert board.status_code == 200
    fragment = board.content.decode()
    world.campaign.refresh_from_db()
    assert fragment.startswith(f'<div class="board-parts" data-seq="{world.campaign.event_seq}">')
    names = ["scene", "map", "map-stacks", "combat", "roster-party", "roster-foes", "roster-others"]
    names.append("members")
    assert sorted(parts(fragment)) == sorted(names)
    assert parts(fragment) == {name: tag for name, tag in parts(page).items() if name in names}
    for name in ("creatures", "chapters", "dungeons", "members"):
        assert f'<template data-options="{name}">' in fragment
    goblin = re.search(
        rf'<li class="creature [^"]*" data-creature="{world.goblin.pk}".*?</li>', page, re.S
    )
    assert goblin[0] in fragment


def test_the_board_fragment_is_for_members_only(world: World, player_client: Client):
    assert (
        signed_in(world.outsider).get(f"/campaigns/{world.campaign.pk}/board/").status_code == 404
    )
    answer = player_client.get(f"/campaigns/{world.campaign.pk}/board/").content.decode()
    assert 'data-part="members"' not in answer  # the member list is the owner's
    assert 'aria-label="Thorin at 1,1, HP 20 of 24, your character"' in answer
