"""Rewind and redo in the browser (issue 25, point 4), at 1280 and 390 px: the owner rewinds
three turns after reading the server's plan, both players see all three collapse live with the
owner's reason, then the owner redoes the first turn as it was and both see it put back.
Screenshots: rewind-*.png under the test artifacts."""

import pytest
from playwright.sync_api import Browser, Page, expect

from audit.models import ToolInvocation
from campaigns.models import Creature, Turn
from gm.services import gm_turn_run, turn_submit
from tests.browser.support import chromium, open_table, screenshot
from tests.browser.test_phone import LAPTOP, PHONE, assert_no_sideways_scroll, sign_in
from tests.conftest import World

pytestmark = pytest.mark.browser


def played(world: World, actor, message: str) -> Turn:
    """A finished turn the scripted GM answered."""
    return gm_turn_run(turn=turn_submit(campaign=world.campaign, actor=actor, message=message))


def at_the_table(browser: Browser, base_url: str, world: World, username: str, size) -> Page:
    page = browser.new_context(base_url=base_url, reduced_motion="reduce", **size).new_page()
    sign_in(page, username)
    open_table(page, world.campaign.pk)
    return page


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_the_owner_rewinds_three_turns_and_redoes_the_first(
    live_world: World, asgi_server: str, size: str
):
    world = live_world
    lia_at = (world.ally.x, world.ally.y)
    first = played(world, world.player, "I attack the orc")
    second = played(world, world.other, "move me to 3,4")
    third = played(world, world.player, "I attack the orc")
    hits = ToolInvocation.objects.filter(tool_name="modify_creature").order_by("sequence")
    after_first = max(0, 15 + hits[0].input["hp_delta"])
    orc_hp = f'[data-creature="{world.orc.pk}"] .hp-text'
    viewport = {"laptop": LAPTOP, "phone": PHONE}[size]
    width = viewport["viewport"]["width"]
    with chromium() as browser:
        owner = at_the_table(browser, asgi_server, world, world.owner.username, viewport)
        player = at_the_table(browser, asgi_server, world, world.player.username, viewport)
        first_block = f'#feed [data-turn="{first.pk}"]'
        # The player may not revert the other player's turn: no rewind past it for them.
        expect(
            player.locator(first_block).get_by_role("button", name="Rewind to here")
        ).to_have_count(0)
        owner.locator(first_block).get_by_role("button", name="Rewind to here").click()
        dialog = owner.locator("#undo-dialog")
        expect(dialog.get_by_role("heading", level=2)).to_have_text(
            "Rewind to before player’s turn: ‘I attack the orc’?"
        )
        expect(dialog.locator(".rewind-turns li")).to_have_text(
            [
                "player’s turn: ‘I attack the orc’",
                "other’s turn: ‘move me to 3,4’",
                "player’s turn: ‘I attack the orc’",
            ]
        )
        expect(dialog.locator(".undo-calls li")).to_have_count(3)
        expect(dialog.locator(".undo-calls")).to_contain_text("Lia moves from 2,1 to 3,4")
        screenshot(owner, f"rewind-plan-{width}.png")
        dialog.get_by_label("Why are you undoing it?").fill("start the fight again")
        dialog.get_by_role("button", name="Rewind").click()
        expect(dialog).to_be_hidden()

        for page in (owner, player):
            expect(page.locator(orc_hp)).to_have_text("15 / 15")
            expect(page.locator("#feed > .turn.undone")).to_have_count(3)
            for turn in (first, second, third):
                expect(page.locator(f'#feed [data-turn="{turn.pk}"] .undo-note')).to_contain_text(
                    "was undone by owner: “start the fight again”"
                )
            assert_no_sideways_scroll(page)
        screenshot(owner, f"rewind-done-owner-{width}.png")
        screenshot(player, f"rewind-done-player-{width}.png")

        owner.locator(first_block).get_by_role("button", name="Redo as it was").click()
        for page in (owner, player):
            redone = page.locator("#feed > .turn:not(.undone)", has_text="Redone: put back")
            expect(redone).to_have_count(1)
            expect(redone.locator(".msg.role-player")).to_contain_text("I attack the orc")
            expect(page.locator(orc_hp)).to_have_text(f"{after_first} / 15")
            expect(page.locator(f"{first_block} .undo-note")).to_contain_text("redone below")
            expect(
                page.locator(first_block).get_by_role("button", name="Redo as it was")
            ).to_have_count(0)
            assert_no_sideways_scroll(page)
        screenshot(owner, f"rewind-redone-owner-{width}.png")
        screenshot(player, f"rewind-redone-player-{width}.png")

    redone_turn = Turn.objects.get(redo_of=first)
    assert Creature.objects.get(pk=world.orc.pk).hp == after_first
    again = ToolInvocation.objects.filter(turn=redone_turn).order_by("sequence")
    assert [r.input for r in again] == [
        r.input for r in ToolInvocation.objects.filter(turn=first).order_by("sequence")
    ]
    lia = Creature.objects.get(pk=world.ally.pk)
    assert (lia.x, lia.y) == lia_at  # the second turn stays rewound
