"""The battle map at a live table: a player drags their token and the other player sees it move
without a reload; the arrow keys move it too; undoing the moves puts it back for both; fog hides
what the GM has not revealed; nobody drags what is not theirs."""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_revert
from campaigns.models import Creature
from tests.browser.support import (
    chromium,
    open_table,
    outside_the_browser_loop,
    screenshot,
    signed_in_page,
)
from tests.conftest import World, commit

pytestmark = pytest.mark.browser

# The cells the GM has revealed: the party's corner; the goblin at 5,5 stays in the fog.
REVEALED = [[x, y] for x in range(7) for y in range(5)]


def token(page: Page, creature: Creature):
    return page.locator(f'#map .map-token[data-creature="{creature.pk}"]')


def cell_centre(page: Page, x: int, y: int) -> tuple[float, float]:
    """Where the centre of map cell x,y is on the screen."""
    return page.eval_on_selector(
        "#map .map-grid",
        """(svg, [x, y]) => {
            const p = new DOMPoint(x * 40 + 20, y * 40 + 20).matrixTransform(svg.getScreenCTM());
            return [p.x, p.y];
        }""",
        [x, y],
    )


def drag(page: Page, creature: Creature, to: tuple[int, int]) -> None:
    box = token(page, creature).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    target = cell_centre(page, *to)
    page.mouse.move(*target, steps=8)
    page.mouse.up()


def expect_at(page: Page, creature: Creature, x: int, y: int, hp: str) -> None:
    shown = token(page, creature)
    expect(shown).to_have_attribute("data-x", str(x))
    expect(shown).to_have_attribute("data-y", str(y))
    said = re.escape(f"{creature.name} at {x},{y}, HP {hp}")
    expect(shown).to_have_attribute("aria-label", re.compile(f"^{said}(, .+)?$"))


def test_a_drag_a_keyboard_move_and_their_undos_reach_both_players_live(
    live_world: World, asgi_server: str
):
    world = live_world
    commit(world, "reveal_fog", {"cells": REVEALED})
    hero, ally, goblin = world.hero, world.ally, world.goblin
    with chromium() as browser:
        player = signed_in_page(browser, asgi_server, world.player.username)
        other = signed_in_page(browser, asgi_server, world.other.username)
        for page in (player, other):
            open_table(page, world.campaign.pk)
            # the goblin stands in the fog: a player's map holds no token of it at all
            expect(page.locator("#map .map-token")).to_have_count(3)
            expect_at(page, hero, 1, 1, "20 of 24")
            expect(page.locator("#map .map-fog")).to_have_count(1)
            expect(token(page, goblin)).to_have_count(0)
        expect(token(player, hero)).to_have_attribute("aria-disabled", "false")
        expect(token(other, hero)).to_have_attribute("aria-disabled", "true")
        expect(token(other, ally)).to_have_attribute("aria-disabled", "false")
        expect(token(player, hero).locator(".token-initials")).to_have_text("T")

        drag(player, hero, (4, 3))
        for page in (player, other):
            expect_at(page, hero, 4, 3, "20 of 24")
        screenshot(other, "map-after-drag.png")

        token(player, hero).focus()
        player.keyboard.press("ArrowRight")
        for page in (player, other):
            expect_at(page, hero, 5, 3, "20 of 24")
        player.keyboard.press("Enter")
        expect(token(player, hero)).to_have_attribute("aria-pressed", "true")
        player.keyboard.press("Escape")
        expect(token(player, hero)).to_have_attribute("aria-pressed", "false")

        drag(other, hero, (0, 4))  # not theirs: nothing happens
        expect_at(other, hero, 5, 3, "20 of 24")

        undo = player.get_by_role("button", name="Undo my move")
        expect(undo).to_have_text("↶ Undo my move (Thorin to 5,3)")
        undo.click()
        for page in (player, other):
            expect_at(page, hero, 4, 3, "20 of 24")
        expect(undo).to_have_text("↶ Undo my move (Thorin to 4,3)")
        undo.click()
        for page in (player, other):
            expect_at(page, hero, 1, 1, "20 of 24")
        expect(undo).to_be_hidden()
        screenshot(other, "map-after-undo.png")

    rows = ToolInvocation.objects.filter(tool_name="move_token").order_by("sequence")
    assert [(r.input["x"], r.input["y"], r.source, r.status, r.user) for r in rows] == [
        (4, 3, InvocationOrigin.USER, ToolInvocation.Status.REVERTED, world.player),
        (5, 3, InvocationOrigin.USER, ToolInvocation.Status.REVERTED, world.player),
    ]
    hero.refresh_from_db()
    assert (hero.x, hero.y) == (1, 1)


def test_the_owner_sees_through_the_fog_moves_a_monster_and_the_active_combatant_glows(
    live_world: World, asgi_server: str
):
    world = live_world
    commit(world, "reveal_fog", {"cells": REVEALED})
    commit(world, "start_combat", {"creature_ids": [world.goblin.pk, world.hero.pk]})
    with chromium() as browser:
        owner = signed_in_page(browser, asgi_server, world.owner.username)
        player = signed_in_page(browser, asgi_server, world.player.username)
        for page in (owner, player):
            open_table(page, world.campaign.pk)
        active = owner.locator("#map .map-token.active")
        expect(active).to_have_count(1)
        expect(active).to_have_attribute("aria-current", "true")
        goblin = token(owner, world.goblin)
        expect(goblin).to_be_visible()
        expect(goblin).to_have_attribute(
            "aria-label", "Goblin at 5,5, HP 7 of 7, acting now, hidden from the players by fog"
        )
        drag(owner, world.goblin, (3, 2))
        expect_at(owner, world.goblin, 3, 2, "7 of 7, acting now")
        expect(token(player, world.goblin)).to_be_visible()  # out of the fog now
        expect_at(player, world.goblin, 3, 2, "7 of 7, acting now")
        screenshot(owner, "map-owner-combat.png")
        for page in (owner, player):
            violations = Axe().run(page, context="#map").response["violations"]
            serious = [v["id"] for v in violations if v["impact"] in ("serious", "critical")]
            assert serious == []
    world.goblin.refresh_from_db()
    assert (world.goblin.x, world.goblin.y) == (3, 2)


def test_on_a_phone_a_tap_selects_the_token_and_a_tap_on_a_cell_moves_it(
    live_world: World, asgi_server: str
):
    world = live_world
    with chromium() as browser:
        phone = browser.new_context(
            base_url=asgi_server,
            viewport={"width": 390, "height": 844},
            has_touch=True,
            is_mobile=True,
            reduced_motion="reduce",  # tokens jump instead of gliding: the screenshot is final
        ).new_page()
        phone.goto("/accounts/login/")
        phone.get_by_label("Username").fill(world.player.username)
        phone.get_by_label("Password").fill("pw-" + world.player.username)
        phone.get_by_role("button", name="Sign in").click()
        open_table(phone, world.campaign.pk)
        hero = token(phone, world.hero)
        hero.scroll_into_view_if_needed()
        box = hero.bounding_box()
        phone.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        expect(hero).to_have_attribute("aria-pressed", "true")
        phone.touchscreen.tap(*cell_centre(phone, 3, 2))
        expect_at(phone, world.hero, 3, 2, "20 of 24")
        expect(hero).to_have_attribute("aria-pressed", "false")
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width == 390  # the map fits: the page does not scroll sideways
        screenshot(phone, "map-phone.png")
    world.hero.refresh_from_db()
    assert (world.hero.x, world.hero.y) == (3, 2)


def test_fog_the_gm_reveals_and_its_undo_redraw_the_map_live(live_world: World, asgi_server: str):
    world = live_world
    commit(world, "reveal_fog", {"cells": [[1, 1]]})
    with chromium() as browser:
        player = signed_in_page(browser, asgi_server, world.player.username)
        open_table(player, world.campaign.pk)
        goblin = token(player, world.goblin)
        expect(goblin).to_have_count(0)  # not drawn for a player while the fog hides it
        reveal = outside_the_browser_loop(
            lambda: commit(world, "reveal_fog", {"cells": [[5, 5], [5, 4]]})
        )
        expect(goblin).to_be_visible()
        outside_the_browser_loop(
            lambda: invocation_revert(
                campaign_id=world.campaign.pk, invocation_id=reveal.pk, user=world.owner
            )
        )
        expect(goblin).to_have_count(0)
        expect(player.locator("#map mask rect[fill=black]")).to_have_count(1)
