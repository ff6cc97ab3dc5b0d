"""Undo from here (issue 12 item 6): the owner undoes an earlier turn and every later change that
depends on it, after reading the server's plan; both players see the undone turn collapse to one
line live, expandable to the original message and its changes."""

import pytest
from playwright.sync_api import expect

from audit.models import ToolInvocation
from campaigns.models import Creature, Turn
from gm.services import gm_turn_run, turn_submit
from tests.browser.support import at_the_table, chromium, screenshot
from tests.conftest import World

pytestmark = pytest.mark.browser


def played(world: World, actor, message: str) -> Turn:
    """A finished turn the scripted GM answered."""
    return gm_turn_run(turn=turn_submit(campaign=world.campaign, actor=actor, message=message))


def test_the_owner_undoes_from_an_earlier_turn_and_both_players_see_it_live(
    live_world: World, asgi_server: str
):
    world = live_world
    first = played(world, world.player, "I attack the orc")
    move = played(world, world.player, "move me to 3,4")
    later = played(world, world.other, "I attack the orc")
    hits = ToolInvocation.objects.filter(tool_name="modify_creature").order_by("sequence")
    hp = [row.input["hp_delta"] for row in hits]
    # HP stops at 0 (modify_creature clamps): two good rolls can take the orc past it, and the
    # page says the damage the orc took, not the damage rolled.
    after_first = max(0, 15 + hp[0])
    after_later = max(0, after_first + hp[1])
    first_hit, later_hit = 15 - after_first, after_first - after_later
    orc_hp = f'[data-creature="{world.orc.pk}"] .hp-text'
    with chromium() as browser:
        owner, player = at_the_table(
            browser, asgi_server, world.campaign.pk, world.owner.username, world.player.username
        )
        first_block = f'#feed [data-turn="{first.pk}"]'
        # The player may not revert the other player's later turn: no button; the owner has one.
        expect(player.get_by_role("button", name="Undo this and what depends on it")).to_have_count(
            0
        )
        from_here = owner.locator(first_block).get_by_role(
            "button", name="Undo this and what depends on it"
        )
        expect(from_here).to_be_visible()
        # Changes read in plain words on the page, the tool's name in a detail.
        expect(owner.locator(first_block).locator(".call .summary")).to_have_text(
            f"Orc takes {first_hit} damage (15 → {after_first})"
        )
        expect(owner.locator(f'#feed [data-turn="{move.pk}"] .call .summary')).to_have_text(
            "Thorin moves from 1,1 to 3,4"
        )

        from_here.click()
        dialog = owner.locator("#undo-dialog")
        expect(dialog.get_by_role("heading", level=2)).to_have_text(
            "Undo player’s turn: ‘I attack the orc’, and every later change that depends on it?"
        )
        changes = dialog.locator(".undo-calls li")
        expect(changes).to_have_count(2)  # each change once: this turn's hit and the later one
        expect(changes.nth(0)).to_contain_text(
            f"Orc takes {later_hit} damage ({after_first} → {after_later})"
        )
        expect(changes.nth(0)).to_contain_text("(later turn)")
        expect(changes.nth(1)).to_contain_text(f"Orc takes {first_hit} damage (15 → {after_first})")
        expect(dialog).to_contain_text("The message and the GM’s reply leave the feed")
        screenshot(owner, "undo-from-here-plan.png")
        dialog.get_by_label("Why are you undoing it?").fill("wrong foe")
        dialog.get_by_role("button", name="Undo this and what depends on it").click()
        expect(dialog).to_be_hidden()

        for page in (owner, player):
            expect(page.locator(orc_hp)).to_have_text("15 / 15")
            note = page.locator(f"{first_block} .undo-note")
            expect(note).to_contain_text("player’s turn was undone by owner: “wrong foe”")
            expect(page.locator(f"{first_block} .undone-body")).to_be_hidden()
            note.click()  # expands to the original message and its changes
            expect(page.locator(f"{first_block} .undone-body .msg.role-player")).to_have_text(
                "player I attack the orc"
            )
            expect(page.locator(f"{first_block} .undone-body .call .summary")).to_have_text(
                f"Orc takes {first_hit} damage (15 → {after_first})"
            )
            expect(page.locator(f'[data-turn="{later.pk}"] .call-status')).to_have_text("undone")
        screenshot(owner, "undo-from-here-owner.png")
        screenshot(player, "undo-from-here-player.png")

    assert Turn.objects.get(pk=first.pk).reverted_by == world.owner
    assert Creature.objects.get(pk=world.orc.pk).hp == 15
    statuses = dict(ToolInvocation.objects.values_list("turn_id", "status"))
    assert statuses[first.pk] == statuses[later.pk] == ToolInvocation.Status.REVERTED
    assert statuses[move.pk] == ToolInvocation.Status.COMMITTED  # independent: stays
