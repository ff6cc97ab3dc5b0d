"""Approval that keeps the table moving, in a real browser at 1280 and 390 px: the GM's blow to
Thorin waits on a card; two later turns say "Waiting for approval" instead of "The GM is
thinking…"; the owner, an approver, is alerted (the title, the top bar's badge, the phone's
pinned banner, a browser notification); Thorin's player objects with a reason, which rejects the
call, and the table moves on. Screenshots under the test artifacts
(`approval-waiting-*-{1280,390}.png`)."""

import pytest
from playwright.sync_api import expect

from audit.models import ToolInvocation
from campaigns.models import Campaign, Creature
from tests.browser.support import (
    ARTIFACTS,
    at_the_table,
    chromium,
    outside_the_browser_loop,
    screenshot,
)
from tests.conftest import World
from tests.servers import WorkerProcess

pytestmark = pytest.mark.browser

# Notifications this page raised, kept for the test (a headless browser shows none): the page's
# script sees notifications as granted, as after the person allowed them.
RECORD_NOTIFICATIONS = """
window.__notes = [];
window.Notification = class {
  static permission = "granted";
  static requestPermission() { return Promise.resolve("granted"); }
  constructor(title, options) { window.__notes.push([title, options.body]); }
};
"""


@pytest.mark.parametrize("width", [1280, 390])
def test_a_held_blow_queues_the_table_alerts_the_gm_and_its_player_objects(
    live_world: World, asgi_server: str, gm_worker: WorkerProcess, width: int
):
    world = live_world
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="watchful")
    thorin_hp = f'[data-creature="{world.hero.pk}"] .hp-text'
    with chromium() as browser:
        owner, player, other = at_the_table(
            browser,
            asgi_server,
            world.campaign.pk,
            world.owner.username,
            world.player.username,
            world.other.username,
        )
        for page in (owner, player, other):
            page.set_viewport_size({"width": width, "height": 844 if width < 600 else 900})
        owner.add_init_script(RECORD_NOTIFICATIONS)
        owner.reload()
        expect(owner.locator("#live")).to_have_attribute("data-state", "open")

        owner.get_by_label("Your message to the table").fill("I attack Thorin")
        owner.get_by_role("button", name="Send").click()
        for page in (owner, player, other):
            expect(page.locator(".approval-card")).to_be_visible()
        other.get_by_label("Your message to the table").fill("I look around the hall.")
        other.get_by_role("button", name="Send").click()
        player.get_by_label("Your message to the table").fill("I open the door.")
        player.get_by_role("button", name="Send").click()

        for page in (owner, player, other):
            waiting = page.locator(".turn .waiting-approval")
            expect(waiting).to_have_count(3)
            expect(waiting.last).to_contain_text(
                "Waiting for approval: the GM’s modify creature call made in an earlier turn "
                "waits for owner or cogm to answer it, since"
            )
            expect(page.locator(".turn .thinking:not(.waiting-approval)")).to_have_count(0)

        # The approver is alerted wherever they are on the page.
        expect(owner).to_have_title(f"(1) {world.campaign.name} · Undoable GM")
        badge = owner.locator("#approval-badge")
        expect(badge).to_be_visible()
        expect(badge).to_contain_text("1 waiting for you")
        banner = owner.locator("#approval-banner")
        if width < 600:
            expect(banner).to_be_visible()
            expect(banner).to_contain_text("A call waits for your answer")
            box = banner.bounding_box()
            assert box is not None and box["y"] == 0  # pinned to the top of the screen
            owner.mouse.wheel(0, 3000)
            expect(banner).to_be_in_viewport()
        else:
            expect(banner).to_be_hidden()
        notes = owner.evaluate("window.__notes")
        assert len(notes) == 1 and notes[0][0] == "A call waits for your answer", notes
        expect(player.locator("#approval-badge")).to_be_visible()  # they may object
        expect(other.locator("#approval-badge")).to_be_hidden()
        expect(other).to_have_title(f"{world.campaign.name} · Undoable GM")
        screenshot(owner, f"approval-waiting-owner-{width}.png")
        screenshot(other, f"approval-waiting-other-{width}.png")

        # One tap brings the card to the approver.
        if width < 600:
            banner.get_by_role("link").click()
        else:
            badge.click()
        expect(owner.locator(".approval-card")).to_be_in_viewport()
        on_screen(owner, f"approval-waiting-owner-screen-{width}.png")

        # Thorin's player sees the card with Object, and objects.
        card = player.locator(".approval-card")
        expect(card.get_by_role("button", name="Object")).to_be_visible()
        expect(card.get_by_role("button", name="Approve")).to_have_count(0)
        card.get_by_label("Why you object (shown to the table)").fill(
            "Thorin was behind the door all round"
        )
        screenshot(player, f"approval-objection-{width}.png")
        card.get_by_role("button", name="Object").evaluate(
            "button => button.scrollIntoView({block: 'center'})"
        )
        on_screen(player, f"approval-objection-screen-{width}.png")
        card.get_by_role("button", name="Object").click()

        for page in (owner, player, other):
            expect(page.locator(".approval-card")).to_have_count(0)
            expect(page.locator(".turn .waiting-approval")).to_have_count(0)
            expect(page.locator(thorin_hp)).to_have_text("20 / 24")
        expect(owner).to_have_title(f"{world.campaign.name} · Undoable GM")
        expect(owner.locator("#approval-badge")).to_be_hidden()
        screenshot(owner, f"approval-objected-owner-{width}.png")

    row = outside_the_browser_loop(
        lambda: ToolInvocation.objects.get(campaign=world.campaign, tool_name="modify_creature")
    )
    assert row.status == "rejected"
    assert outside_the_browser_loop(lambda: row.transitions.get().reason) == (
        "player objected to this call: Thorin was behind the door all round"
    )
    assert outside_the_browser_loop(lambda: Creature.objects.get(pk=world.hero.pk).hp) == 20


def on_screen(page, name: str) -> None:
    """What the person sees now (the viewport, fixed banners where they stand), beside the
    full-page shots."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / name)
