"""A table set up from the browser: the owner starts a campaign and invites a friend by link,
the friend signs up through it and makes a character, the owner adds a monster, sets the scene
and wounds the monster by hand, then undoes that, and each sees the other's changes live,
without a reload."""

import pytest
from playwright.sync_api import Page, expect

from audit.models import ToolInvocation
from campaigns.models import Campaign, Creature, Membership
from tests.browser.support import chromium, screenshot, signed_in_page
from tests.conftest import World

pytestmark = pytest.mark.browser


def live(page: Page) -> None:
    expect(page.locator("#live")).to_have_attribute("data-state", "open")


def friend_joins(page: Page, link: str, base_url: str) -> None:
    """The friend follows the link, signs up on the way, and takes the seat."""
    page.goto(link)  # signed out, the link already names the campaign and who invites
    expect(page.get_by_text("owner invites you to play Harbour Nights.")).to_be_visible()
    page.get_by_role("link", name="Sign up to join").click()
    page.get_by_label("Username").fill("friend")
    page.get_by_label("Password", exact=True).fill("a-Long-pass-123")
    page.get_by_label("Password confirmation").fill("a-Long-pass-123")
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_text("owner invites you to play.")).to_be_visible()
    page.get_by_role("button", name="Join the table").click()
    expect(page.locator("h1.campaign-title")).to_have_text("Harbour Nights")
    live(page)


def test_a_table_set_up_from_the_browser_is_live_for_both(live_world: World, asgi_server: str):
    world = live_world
    with chromium() as browser:
        owner = signed_in_page(browser, asgi_server, world.owner.username)
        owner.get_by_label("Name").fill("Harbour Nights")
        owner.get_by_role("button", name="Create campaign").click()
        live(owner)
        owner.get_by_text("Invite players").click()
        owner.get_by_label("People who may join").fill("1")
        owner.get_by_role("button", name="Make an invite link").click()
        link = owner.get_by_label("Invite link")
        expect(link).to_be_visible()
        url = link.input_value()
        assert url.startswith(f"{asgi_server}/invites/")

        friend = browser.new_context(
            base_url=asgi_server, viewport={"width": 1280, "height": 900}
        ).new_page()
        friend_joins(friend, url, asgi_server)

        character = friend.locator("#character")
        character.get_by_label("Name").fill("Pip")
        character.get_by_label("HP", exact=True).fill("9")
        character.get_by_label("Max HP").fill("9")
        character.get_by_role("button", name="Create my character").click()
        for page in (owner, friend):
            pip = page.locator("#roster-party .creature", has_text="Pip")
            expect(pip.locator(".hp-text")).to_have_text("9 / 9")
            expect(pip.locator(".player")).to_have_text("played by friend")

        owner.get_by_text("Add a creature").click()
        creature = owner.locator("#creatures form")
        creature.get_by_label("Name").fill("Wolf")
        creature.get_by_label("Kind").select_option("monster")
        creature.get_by_label("HP", exact=True).fill("11")
        creature.get_by_label("Max HP").fill("11")
        creature.get_by_role("button", name="Add creature").click()
        for page in (owner, friend):
            expect(page.locator("#roster-foes .creature", has_text="Wolf")).to_be_visible()

        scene = owner.locator('form[data-hand="set_scene"]')
        scene.get_by_label("Where").fill("The quay")
        scene.get_by_label("What the players see").fill("Fog rolls over the black water.")
        scene.get_by_role("button", name="Set scene").click()
        for page in (owner, friend):
            expect(page.locator("#scene .scene-text")).to_have_text(
                "Fog rolls over the black water."
            )
            expect(page.locator("#scene .location")).to_have_text("The quay")

        owner.get_by_text("Hit points and conditions").click()
        wound = owner.locator('form[data-hand="modify_creature"]')
        wound.get_by_label("Creature").select_option(label="Wolf")
        wound.get_by_label("HP change").fill("-4")
        wound.get_by_label("Add conditions").fill("prone")
        wound.get_by_role("button", name="Apply").click()
        for page in (owner, friend):
            wolf = page.locator("#roster-foes .creature", has_text="Wolf")
            expect(wolf.locator(".hp-text")).to_have_text("7 / 11")
            expect(wolf.locator(".conditions")).to_have_text("prone")
            expect(page.locator("#feed .call", has_text="Wolf")).to_be_visible()
        expect(friend.locator("#hand")).to_have_count(0)
        expect(friend.locator("#setup")).to_have_count(0)
        screenshot(owner, "setup-table-owner.png")
        screenshot(friend, "setup-table-friend.png")

        expect(friend.get_by_role("button", name="Undo this change")).to_have_count(0)
        owner.get_by_role("button", name="Undo this change").last.click()
        dialog = owner.locator("#undo-dialog")
        expect(dialog.locator(".undo-calls")).to_contain_text("Wolf takes 4 damage (11 → 7)")
        dialog.get_by_label("Why are you undoing it?").fill("wrong wolf")
        dialog.get_by_role("button", name="Undo turn").click()
        expect(dialog).to_be_hidden()
        for page in (owner, friend):
            wolf = page.locator("#roster-foes .creature", has_text="Wolf")
            expect(wolf.locator(".hp-text")).to_have_text("11 / 11")
            expect(wolf.locator(".conditions")).to_be_hidden()
            expect(page.locator("#feed .undo-note")).to_contain_text("wrong wolf")
            expect(page.locator("#scene .location")).to_have_text("The quay")  # its own turn
        screenshot(friend, "setup-table-after-undo.png")

    campaign = Campaign.objects.get(name="Harbour Nights")
    assert Membership.objects.get(campaign=campaign, user__username="friend").role == "player"
    pip = Creature.objects.get(campaign=campaign, name="Pip")
    assert (pip.kind, pip.controlled_by.username) == ("pc", "friend")
    wolf = Creature.objects.get(campaign=campaign, name="Wolf")
    assert (wolf.hp, wolf.conditions) == (11, [])
    rows = ToolInvocation.objects.filter(campaign=campaign).order_by("sequence")
    assert [(r.tool_name, r.source, r.user.username, r.status) for r in rows] == [
        ("set_scene", "user", "owner", "committed"),
        ("modify_creature", "user", "owner", "reverted"),
    ]
    assert rows[1].reverted_by.username == "owner" and rows[1].revert_reason == "wrong wolf"
