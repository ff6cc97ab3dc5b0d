"""Dice at a live table: one player rolls from the page and the other sees the roll at once,
each die and the total; a bad formula says why; the GM's roll appears inside its turn."""

import pytest
from playwright.sync_api import expect

from ai_tools import registry
from ai_tools.base import ToolContext
from campaigns.models import DiceRoll
from campaigns.services import turn_create
from tests.browser.support import (
    chromium,
    open_table,
    outside_the_browser_loop,
    screenshot,
    signed_in_page,
)
from tests.conftest import World, narrate

pytestmark = pytest.mark.browser


def test_a_roll_reaches_the_other_player_live_with_each_die_and_the_total(
    live_world: World, asgi_server: str
):
    world = live_world
    with chromium() as browser:
        player = signed_in_page(browser, asgi_server, world.player.username)
        other = signed_in_page(browser, asgi_server, world.other.username)
        for page in (player, other):
            open_table(page, world.campaign.pk)

        player.get_by_label("Dice", exact=True).fill("2d6+3")
        player.get_by_label("Advantage").select_option("advantage")
        player.get_by_role("button", name="Roll").click()
        for page in (player, other):
            expect(page.locator("#feed .roll-entry .roll")).to_have_count(1)
        roll = outside_the_browser_loop(DiceRoll.objects.get)
        for page in (player, other):
            shown = page.locator(f'#feed [data-roll="{roll.pk}"]')
            expect(shown.locator(".author")).to_have_text("player")
            expect(shown.locator(".formula")).to_have_text("2d6+3")
            expect(shown.locator(".mode")).to_have_text("with advantage")
            expect(shown.locator(".dice .die")).to_have_text([str(d) for d in roll.dice])
            expect(shown.locator(".discarded .die")).to_have_text([str(d) for d in roll.discarded])
            expect(shown.locator(".total")).to_have_text(str(roll.total))
        screenshot(other, "dice-player-roll.png")

        player.get_by_label("Dice", exact=True).fill("99d6")
        player.get_by_role("button", name="Roll").click()
        expect(player.locator(".dice-error")).to_have_text(
            "formula: Dice must be 1-50 dice of 2-100 sides."
        )
        other.reload()
        expect(other.locator("#feed .roll")).to_have_count(1)  # still there after a reload
    assert DiceRoll.objects.count() == 1


def gm_rolls(world: World, turn) -> DiceRoll:
    tool = registry.read_tool("roll_dice")
    tool.run(ToolContext(world.campaign, world.player, turn), {"expression": "d20+4"})
    return DiceRoll.objects.get(turn=turn)


def test_the_gms_roll_appears_live_inside_its_turn(live_world: World, asgi_server: str):
    world = live_world
    turn = turn_create(campaign=world.campaign, actor=world.player, message="I pick the lock")
    narrate(turn, "Roll.")
    with chromium() as browser:
        page = signed_in_page(browser, asgi_server, world.other.username)
        open_table(page, world.campaign.pk)
        gm = outside_the_browser_loop(lambda: gm_rolls(world, turn))
        inside = page.locator(f'#feed [data-turn="{turn.pk}"] [data-roll="{gm.pk}"]')
        expect(inside.locator(".author")).to_contain_text("Game Master")
        expect(inside.locator(".modifier")).to_have_text("+4")
        expect(inside.locator(".total")).to_have_text(str(gm.total))
