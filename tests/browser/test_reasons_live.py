"""Reasons reach the table live (issue 25, point 4): the player withdraws the GM's held call
with a reason, and both the owner and the player read in the feed who withdrew it and why —
not "rejected"."""

import pytest
from playwright.sync_api import expect

from campaigns.models import Campaign
from tests.browser.support import at_the_table, chromium, screenshot
from tests.conftest import World
from tests.servers import WorkerProcess

pytestmark = pytest.mark.browser


def test_a_withdrawal_and_its_reason_show_in_the_feed_for_everyone(
    live_world: World, asgi_server: str, gm_worker: WorkerProcess
):
    world = live_world
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    with chromium() as browser:
        owner, player = at_the_table(
            browser, asgi_server, world.campaign.pk, world.owner.username, world.player.username
        )
        player.get_by_label("Your message to the table").fill("I attack the goblin")
        player.get_by_role("button", name="Send").click()
        card = player.locator(".approval-card")
        expect(card).to_be_visible()
        card.get_by_placeholder("Reason (optional)").fill("I change my mind")
        card.get_by_role("button", name="Withdraw").click()
        for page in (owner, player):
            note = page.locator("#feed .call .call-note")
            expect(note).to_have_text("player withdrew this call: I change my mind")
            expect(page.locator("#feed .call .call-status")).to_have_text("not done")
        screenshot(owner, "reasons-withdrawn-owner.png")
