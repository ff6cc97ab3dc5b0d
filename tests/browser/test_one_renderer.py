"""One renderer, live: after changes arrive over the websocket, every part of the board the
page swapped in (scene, map, combat, rosters, the forms' choices) is exactly what a fresh load
of the page draws. The script never draws the board itself, so there is nothing to drift."""

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import chromium, open_table, signed_in_page
from tests.conftest import World

pytestmark = pytest.mark.browser

# Each part's drawing, without what the page adds for its own user (a card's glow on change, a
# token's selection) and the choice made in a select.
DRAWING = """() => Object.fromEntries(
  [...document.querySelectorAll("[data-part], select[data-options]")].map((part, index) => {
    const copy = part.cloneNode(true);
    copy.querySelectorAll(".changed").forEach((node) => node.classList.remove("changed"));
    const key = part.dataset.part ?? `${part.dataset.options}-${index}`;
    return [key, copy.outerHTML];
  }))"""
# The page's own API helper (the module the page already loaded), so a call carries its session
# and CSRF token as the page's forms do.
API = """async ([method, path, body]) => {
  const table = await import("/static/js/table.js");
  const response = await table.request(method, table.API + path, body);
  return [response.status, await response.json()];
}"""


def api(page: Page, method: str, path: str, body: dict | None = None) -> dict:
    status, answer = page.evaluate(API, [method, path, body])
    assert status in (200, 201), answer
    return answer


def board_drawing(page: Page) -> dict[str, str]:
    return page.evaluate(DRAWING)


def assert_same_as_a_fresh_load(page: Page) -> None:
    """The live page's board equals the board of the page loaded afresh in a new tab."""
    fresh = page.context.new_page()
    fresh.goto(page.url)
    try:
        live, drawn = board_drawing(page), board_drawing(fresh)
        assert sorted(live) == sorted(drawn)
        for part in drawn:
            assert live[part] == drawn[part], part
    finally:
        fresh.close()


def test_live_updates_draw_the_board_exactly_as_a_fresh_page(live_world: World, asgi_server: str):
    world = live_world
    with chromium() as browser:
        owner = signed_in_page(browser, asgi_server, world.owner.username)
        open_table(owner, world.campaign.pk)
        changes = [
            ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5}),
            ("modify_creature", {"creature_id": world.hero.pk, "add_conditions": ["prone"]}),
            ("start_combat", {"creature_ids": [world.goblin.pk, world.hero.pk]}),
            ("reveal_fog", {"cells": [[0, 0], [1, 1], [5, 5]]}),
            ("move_token", {"creature_id": world.orc.pk, "x": 9, "y": 6}),
            ("set_scene", {"description": "Rain on the battlements.", "location": "The keep"}),
        ]
        turn = api(owner, "POST", "/turns/", {"message": "The GM sets the table", "run_gm": False})
        for tool, payload in changes:
            api(owner, "POST", f"/turns/{turn['id']}/tool-calls/", {"tool": tool, "input": payload})
        bat = {"name": "Bat", "kind": "monster", "hp": 3, "max_hp": 3, "x": 2, "y": 5}
        api(owner, "POST", "/creatures/", bat)
        expect(owner.locator("#roster-foes .creature", has_text="Bat")).to_be_visible()
        expect(owner.locator('#hand select[data-options="creatures"]').first).to_contain_text("Bat")
        orc = owner.locator(f'#map [data-creature="{world.orc.pk}"]')
        expect(orc).to_have_attribute("data-x", "9")
        expect(owner.locator("#scene .location")).to_have_text("The keep")
        expect(
            owner.locator(f'#roster-party [data-creature="{world.hero.pk}"] .conditions')
        ).to_have_text("prone")
        expect(owner.locator("#combat .initiative li")).to_have_count(2)
        expect(owner.locator("#map .map-fog")).to_have_count(1)
        assert_same_as_a_fresh_load(owner)
