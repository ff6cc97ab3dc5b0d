"""Two players at one live table: a GM hit and its undo reach both browsers."""

import pytest
from playwright.sync_api import expect

from audit.models import ToolInvocation
from campaigns.models import ChatMessage, Creature, Turn
from tests.browser.support import chromium, open_table, screenshot, signed_in_page
from tests.conftest import World
from tests.servers import WorkerProcess

# The GM's events leave its worker process: they reach the server's websockets through Redis.
pytestmark = pytest.mark.browser

ATTACK = "I attack the goblin"


def test_two_players_see_a_gm_hit_and_its_undo_live(
    live_world: World, asgi_server: str, gm_worker: WorkerProcess
):
    world = live_world
    goblin_hp = f'[data-creature="{world.goblin.pk}"] .hp-text'
    with chromium() as browser:
        player = signed_in_page(browser, asgi_server, world.player.username)
        other = signed_in_page(browser, asgi_server, world.other.username)
        for page in (player, other):
            open_table(page, world.campaign.pk)
            expect(page.locator(goblin_hp)).to_have_text("7 / 7")

        player.get_by_label("Your message to the table").fill(ATTACK)
        player.get_by_role("button", name="Send").click()

        for page in (player, other):
            expect(page.locator(".msg.role-player .text")).to_have_text(ATTACK)
            expect(page.locator(".msg.role-gm.ai").first).to_be_visible()
            expect(page.locator(".call", has_text="Goblin takes").first).to_be_visible()
            expect(page.locator(goblin_hp)).not_to_have_text("7 / 7")
        hit = player.locator(goblin_hp).inner_text()
        expect(other.locator(goblin_hp)).to_have_text(hit)
        expect(other.locator("button.undo")).to_have_count(0)  # neither its actor nor the owner
        screenshot(player, "live-table-after-hit.png")

        player.get_by_role("button", name="Undo this turn").click()
        dialog = player.locator("#undo-dialog")
        expect(dialog).to_be_visible()
        hp_after_hit = hit.split(" / ")[0]
        expect(dialog.locator(".undo-calls")).to_contain_text(f"(7 → {hp_after_hit})")
        expect(dialog.locator(".undo-changes")).to_contain_text(f"Goblin hp: {hp_after_hit} → 7")
        screenshot(player, "live-table-undo-dialog.png")
        dialog.get_by_label("Why are you undoing it?").fill("wrong target: I meant the orc")
        dialog.get_by_role("button", name="Undo turn").click()
        expect(dialog).to_be_hidden()

        for page in (player, other):
            expect(page.locator(goblin_hp)).to_have_text("7 / 7")
            expect(page.locator("#feed").get_by_text(ATTACK)).to_be_hidden()  # folded in its line
            expect(page.locator("#feed .undo-note")).to_contain_text(
                "wrong target: I meant the orc"
            )
            expect(page.locator("#feed > .turn:not(.undone) .msg")).to_have_count(0)
        screenshot(other, "live-table-after-undo.png")

    turn = Turn.objects.get(campaign=world.campaign)
    assert turn.reverted_by == world.player
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7
    assert set(ToolInvocation.objects.filter(turn=turn).values_list("status", flat=True)) == {
        ToolInvocation.Status.REVERTED
    }
    assert not ChatMessage.objects.filter(turn=turn, reverted=False).exists()
