"""Human in the loop at a live table: the GM's critical hit waits on a card; the owner approves
it on the page while a player watches the card, and both see it go and the hit land."""

import pytest
from playwright.sync_api import expect

from audit.models import ToolInvocation
from campaigns.models import Campaign
from tests.browser.support import (
    at_the_table,
    chromium,
    outside_the_browser_loop,
    screenshot,
)
from tests.conftest import World
from tests.servers import WorkerProcess

pytestmark = pytest.mark.browser


def test_the_owner_approves_on_the_page_while_a_player_watches_the_card(
    live_world: World, asgi_server: str, gm_worker: WorkerProcess
):
    world = live_world
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    goblin_hp = f'[data-creature="{world.goblin.pk}"] .hp-text'
    with chromium() as browser:
        owner, player = at_the_table(
            browser, asgi_server, world.campaign.pk, world.owner.username, world.player.username
        )

        player.get_by_label("Your message to the table").fill("I attack the goblin")
        player.get_by_role("button", name="Send").click()

        for page in (owner, player):
            card = page.locator(".approval-card")
            expect(card).to_be_visible()
            expect(card.locator("h3")).to_contain_text("Goblin takes")
            expect(page.locator(goblin_hp)).to_have_text("7 / 7")
        expect(
            player.locator(".approval-card").get_by_role("button", name="Withdraw")
        ).to_be_visible()
        expect(
            player.locator(".approval-card").get_by_role("button", name="Approve")
        ).to_have_count(0)
        screenshot(player, "approval-card-player.png")
        screenshot(owner, "approval-card-owner.png")

        owner.locator(".approval-card").get_by_role("button", name="Approve").click()

        for page in (owner, player):
            expect(page.locator(".approval-card")).to_have_count(0)
            expect(page.locator(goblin_hp)).not_to_have_text("7 / 7")
            expect(page.locator(".msg.role-gm.ai").first).to_be_visible()

    ran = outside_the_browser_loop(
        lambda: ToolInvocation.objects.get(campaign=world.campaign, approval_of__isnull=False)
    )
    assert ran.status == "committed"
