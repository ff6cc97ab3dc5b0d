"""The first evening, end to end, on a laptop (1280 px) and on a phone (390 px): a new user signs
up and creates a campaign, invites a friend by link, the friend signs up through it and joins,
both make characters, the owner adds a monster and sets the scene, they play turns with the
(scripted) GM, roll dice, move a token on the map, undo a turn and then undo from an earlier one;
each sees the other's changes live, without a reload. Screenshots of each step are saved as
artifacts (tests/browser/support.py: ARTIFACTS). Every wait is on what the page shows."""

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from audit.models import ToolInvocation
from campaigns.models import Campaign, Creature, Turn
from tests.browser.support import chromium, screenshot
from tests.browser.test_map import cell_centre
from tests.browser.test_one_renderer import assert_same_as_a_fresh_load
from tests.browser.test_phone import assert_composer_on_screen, assert_no_sideways_scroll
from tests.realtime.conftest import shared_layer

# The worker's GM turns reach the server's websockets through the layer the processes share.
pytestmark = [pytest.mark.browser, shared_layer]

SIZES = {
    "laptop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True},
}
PASSWORD = "a-Long-pass-123"


class Journey:
    """The pages of one evening at one screen size, and its screenshots."""

    def __init__(self, browser: Browser, base_url: str, size: str):
        self.browser, self.base_url, self.size = browser, base_url, size
        self.shots = 0

    def page(self) -> Page:
        context = self.browser.new_context(
            base_url=self.base_url, reduced_motion="reduce", **SIZES[self.size]
        )
        return context.new_page()

    def shot(self, page: Page, what: str) -> None:
        self.shots += 1
        screenshot(page, f"journey/{self.size}/{self.shots:02d}-{what}.png")

    def fits(self, page: Page) -> None:
        """At phone width nothing scrolls sideways and the message box is within one screen."""
        if self.size == "phone":
            assert_no_sideways_scroll(page)
            if page.locator("#say").count():
                assert_composer_on_screen(page)


def sign_up(page: Page, username: str) -> None:
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()


def live(page: Page) -> None:
    expect(page.locator("#live")).to_have_attribute("data-state", "open")


def card(page: Page, roster: str, name: str):
    return page.locator(f"#roster-{roster} .creature", has_text=name)


def token(page: Page, name: str):
    return page.locator(f'#map .map-token[data-name="{name}"]')


def send(page: Page, message: str) -> None:
    box = page.get_by_label("Your message to the table")
    box.fill(message)
    page.get_by_role("button", name="Send").click()
    expect(box).to_have_value("")


def move_token(page: Page, size: str, name: str, to: tuple[int, int]) -> None:
    """A drag with the mouse on a laptop; a tap on the token then on the cell on a phone."""
    shown = token(page, name)
    shown.scroll_into_view_if_needed()
    box = shown.bounding_box()
    centre = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    if size == "phone":
        page.touchscreen.tap(*centre)
        expect(shown).to_have_attribute("aria-pressed", "true")
        page.touchscreen.tap(*cell_centre(page, *to))
        return
    page.mouse.move(*centre)
    page.mouse.down()
    page.mouse.move(*cell_centre(page, *to), steps=8)
    page.mouse.up()


def undo_dialog(page: Page, button: str, reason: str) -> None:
    dialog = page.locator("#undo-dialog")
    expect(dialog.locator(".undo-calls")).to_be_visible()
    dialog.get_by_label("Why are you undoing it?").fill(reason)
    dialog.get_by_role("button", name=button).click()
    expect(dialog).to_be_hidden()


def gm_answered(pages: tuple[Page, ...], count: int) -> None:
    """Every page shows `count` turns the GM has answered (its reply drawn, not streaming)."""
    for page in pages:
        expect(
            page.locator("#feed > .turn:not(.undone) .msg.role-gm:not(.streaming)")
        ).to_have_count(count)


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_the_first_evening_from_sign_up_to_undo_from_here(asgi_server: str, gm_worker, size: str):
    owner_name, friend_name = f"mara-{size}", f"tom-{size}"
    with chromium() as browser:
        journey = Journey(browser, asgi_server, size)
        owner = journey.page()
        owner.goto("/accounts/signup/")
        journey.fits(owner)
        sign_up(owner, owner_name)
        expect(owner).to_have_url(f"{asgi_server}/campaigns/")
        journey.fits(owner)
        owner.get_by_label("Name").fill("The Drowned Bell")
        # New campaigns start `watchful`; this owner wants every critical call approved.
        owner.get_by_label("Approval").select_option("critical")
        owner.get_by_role("button", name="Create campaign").click()
        live(owner)
        journey.fits(owner)
        journey.shot(owner, "new-campaign")

        owner.get_by_text("Invite players").click()
        owner.get_by_label("People who may join").fill("1")
        owner.get_by_role("button", name="Make an invite link").click()
        link = owner.get_by_label("Invite link")
        expect(link).to_be_visible()
        journey.shot(owner, "invite-link")

        friend = journey.page()
        friend.goto(link.input_value())  # signed out: the campaign and who invites, named
        expect(
            friend.get_by_text(f"{owner_name} invites you to play The Drowned Bell.")
        ).to_be_visible()
        journey.shot(friend, "invite-signed-out")
        friend.get_by_role("link", name="Sign up to join").click()
        sign_up(friend, friend_name)
        expect(friend.get_by_text(f"{owner_name} invites you to play.")).to_be_visible()
        journey.fits(friend)
        friend.get_by_role("button", name="Join the table").click()
        expect(friend.locator("h1.campaign-title")).to_have_text("The Drowned Bell")
        live(friend)
        journey.fits(friend)
        # The owner's page hears of the new member: the "Played by" choices offer them.
        played_by = owner.locator("#creatures form").get_by_label("Played by")
        expect(played_by.locator("option", has_text=friend_name)).to_have_count(1)

        character = friend.locator("#character")
        character.get_by_label("Name").fill("Pip")
        character.get_by_label("HP", exact=True).fill("9")
        character.get_by_label("Max HP").fill("9")
        character.get_by_role("button", name="Create my character").click()

        owner.get_by_text("Add a creature").click()
        creature = owner.locator("#creatures form")
        creature.get_by_label("Name").fill("Vera")
        creature.get_by_label("Kind").select_option("pc")
        creature.get_by_label("Played by").select_option(owner_name)
        creature.get_by_label("HP", exact=True).fill("12")
        creature.get_by_label("Max HP").fill("12")
        creature.get_by_label("x", exact=True).fill("1")
        creature.get_by_role("button", name="Add creature").click()
        expect(creature.get_by_label("Name")).to_have_value("")  # posted: the form is reset
        creature.get_by_label("Name").fill("Wolf")
        creature.get_by_label("Kind").select_option("monster")
        creature.get_by_label("HP", exact=True).fill("30")
        creature.get_by_label("Max HP").fill("30")
        creature.get_by_label("x", exact=True).fill("6")
        creature.get_by_label("y", exact=True).fill("3")
        creature.get_by_role("button", name="Add creature").click()
        for page in (owner, friend):
            expect(card(page, "party", "Pip").locator(".player")).to_have_text(
                f"played by {friend_name}"
            )
            expect(card(page, "party", "Vera").locator(".player")).to_have_text(
                f"played by {owner_name}"
            )
            expect(card(page, "foes", "Wolf").locator(".hp-text")).to_have_text("30 / 30")
            expect(token(page, "Wolf")).to_have_attribute("data-x", "6")

        scene = owner.locator('form[data-hand="set_scene"]')
        scene.get_by_label("Where").fill("The bell tower")
        scene.get_by_label("What the players see").fill("A wolf circles the rusted bell.")
        scene.get_by_role("button", name="Set scene").click()
        for page in (owner, friend):
            expect(page.locator("#scene .location")).to_have_text("The bell tower")
            journey.fits(page)
        journey.shot(owner, "table-set-owner")
        journey.shot(friend, "table-set-friend")

        # A turn: the friend attacks, the GM answers, both see the wolf hurt.
        send(friend, "I attack the wolf")
        # A campaign at `critical` holds critical calls back: the GM's hit waits on a card; the
        # owner approves it, the friend (whose turn it is) may only withdraw it.
        for page in (owner, friend):
            expect(page.locator(".approval-card h3")).to_contain_text("Wolf takes")
            journey.fits(page)
        held = friend.locator(".approval-card")
        expect(held.get_by_role("button", name="Withdraw")).to_be_visible()
        expect(held.get_by_role("button", name="Approve")).to_have_count(0)
        journey.shot(friend, "approval-card-friend")
        owner.locator(".approval-card").get_by_role("button", name="Approve").click()
        gm_answered((owner, friend), 1)
        for page in (owner, friend):
            expect(page.locator(".approval-card")).to_have_count(0)
        for page in (owner, friend):
            expect(card(page, "foes", "Wolf").locator(".hp-text")).not_to_have_text("30 / 30")
            # One line for the call: the approved run's, with the change it made (the held row
            # it ran for is not a second call).
            expect(page.locator("#feed .call .summary", has_text="Wolf takes")).to_have_count(1)
            expect(page.locator("#feed .call .summary", has_text="(30 → ")).to_be_visible()
            expect(page.locator("#feed .call .call-status")).to_have_count(0)  # done, unmarked
        first_hp = card(owner, "foes", "Wolf").locator(".hp-text").inner_text()
        journey.shot(friend, "first-turn")

        # Dice: the owner rolls with advantage, both see formula, dice and total.
        owner.get_by_label("Dice", exact=True).fill("2d6+3")
        owner.get_by_label("Advantage").select_option("advantage")
        owner.get_by_role("button", name="Roll").click()
        for page in (owner, friend):
            roll = page.locator("#feed .roll-entry .roll").last
            expect(roll.locator(".formula")).to_have_text("2d6+3")
            expect(roll.locator(".dice .die")).to_have_count(2)
            expect(roll.locator(".total")).to_have_text(re.compile(r"^\d+$"))
        journey.shot(friend, "dice")

        # The map: the friend moves Pip; the owner sees it move.
        move_token(friend, size, "Pip", (3, 2))
        for page in (owner, friend):
            expect(token(page, "Pip")).to_have_attribute("data-x", "3")
            expect(token(page, "Pip")).to_have_attribute("data-y", "2")
        journey.shot(owner, "token-moved")

        # The owner lets the GM's calls run at once from now on (a full-page form).
        owner.locator(".policy summary").click()
        owner.locator(".policy").get_by_label("Approval").select_option("none")
        owner.locator(".policy").get_by_role("button", name="Save").click()
        live(owner)

        # Two more turns; the friend undoes the latest one.
        send(owner, "I attack the wolf")
        gm_answered((owner, friend), 2)
        send(friend, "I hit the wolf")
        gm_answered((owner, friend), 3)
        friend.locator("#feed > .turn:last-child").get_by_role(
            "button", name="Undo this turn"
        ).click()
        undo_dialog(friend, "Undo turn", "wrong target")
        for page in (owner, friend):
            expect(page.locator("#feed > .turn.undone .undo-note")).to_contain_text("wrong target")
            gm_answered((page,), 2)
        journey.shot(owner, "turn-undone")

        # Undo from here: the owner rewinds from the first turn, the friend's and their own.
        first = owner.locator("#feed > .turn", has_text="I attack the wolf").first
        first.get_by_role("button", name="Undo this and what depends on it").click()
        undo_dialog(owner, "Undo this and what depends on it", "start the fight again")
        for page in (owner, friend):
            expect(card(page, "foes", "Wolf").locator(".hp-text")).to_have_text("30 / 30")
            # The first turn collapses; the later turn that hit the wolf again keeps its line,
            # its call undone with it.
            expect(page.locator("#feed > .turn.undone")).to_have_count(2)
            later = page.locator("#feed > .turn:not(.undone)", has_text="I attack the wolf")
            expect(later.locator(".call-status")).to_have_text("undone")
            expect(page.locator("#feed .undo-note").first).to_contain_text("start the fight again")
            expect(token(page, "Pip")).to_have_attribute("data-x", "3")  # not a turn's change
            journey.fits(page)
        journey.shot(owner, "undone-from-here-owner")
        journey.shot(friend, "undone-from-here-friend")
        assert_same_as_a_fresh_load(friend)

    campaign = Campaign.objects.get(name="The Drowned Bell")
    assert first_hp != "30 / 30"
    assert Creature.objects.get(campaign=campaign, name="Wolf").hp == 30
    assert Turn.objects.filter(campaign=campaign, reverted_at__isnull=False).count() == 2
    moves = ToolInvocation.objects.filter(campaign=campaign, tool_name="move_token")
    assert [(m.input["x"], m.input["y"], m.user.username, m.status) for m in moves] == [
        (3, 2, friend_name, ToolInvocation.Status.COMMITTED)
    ]
    hits = ToolInvocation.objects.filter(campaign=campaign, tool_name="modify_creature")
    ran = hits.exclude(status=ToolInvocation.Status.PENDING)  # not the approved hit's held row
    assert {h.status for h in ran} == {ToolInvocation.Status.REVERTED}
    assert ran.filter(approval_of__isnull=False).count() == 1  # the first hit, run once approved
    assert campaign.approval_policy == Campaign.ApprovalPolicy.NONE
