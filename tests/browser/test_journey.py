"""The first evening, end to end, on a laptop (1280 px) and on a phone (390 px): a new user signs
up and creates a campaign, invites a friend by link, the friend signs up through it and joins,
both make characters, the owner adds a monster and sets the scene, they play turns with the
(scripted) GM, roll dice, move a token on the map, undo a turn and then undo from an earlier one;
each sees the other's changes live, without a reload.

The second evening, at both sizes, is issue 25's "What must be shown", played by the shared
world's group (tests/conftest.py): the GM's blow to Thorin is held while two later turns say
they wait for approval; Thorin's player objects; three turns are rewound and the first redone;
the map has the GM's background image and refuses a drag with a reason; the GM's Next turn
button moves the fight on; a slow model at the GM's seat is stopped mid-sentence (the turn ends
cancelled, nothing applied); and every tool's card is read on the approval cards.

Screenshots of each step are saved as artifacts (tests/browser/support.py: ARTIFACTS), under
`journey/<size>/`: `NN-<step>.png` for the first evening, `2-NN-<step>.png` for the second.
Every wait is on what the page shows."""

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from audit.models import ToolInvocation
from campaigns.models import Campaign, Creature, Turn
from campaigns.services import campaign_map_set
from tests.browser.support import chromium, open_table, outside_the_browser_loop, screenshot
from tests.browser.test_map import cell_centre
from tests.browser.test_map_plays import press
from tests.browser.test_one_renderer import assert_same_as_a_fresh_load
from tests.browser.test_openai_seat import SEAT
from tests.browser.test_phone import assert_composer_on_screen, assert_no_sideways_scroll, sign_in
from tests.browser.test_tool_cards import hold_every_tool
from tests.conftest import World, dump
from tests.gm.fake_openai import FakeOpenAI
from tests.gm.test_stop import CHUNKS, PACE, hit
from tests.images import png
from tests.pages.readable import internal_words

# The worker's GM turns reach the server's websockets through the layer the processes share.
pytestmark = pytest.mark.browser

SIZES = {
    "laptop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True},
}
PASSWORD = "a-Long-pass-123"


class Journey:
    """The pages of one evening at one screen size, and its screenshots."""

    def __init__(self, browser: Browser, base_url: str, size: str, evening: str = ""):
        self.browser, self.base_url, self.size = browser, base_url, size
        self.evening = evening  # the screenshots' prefix
        self.shots = 0

    def page(self) -> Page:
        context = self.browser.new_context(
            base_url=self.base_url, reduced_motion="reduce", **SIZES[self.size]
        )
        return context.new_page()

    def signed_in(self, username: str, campaign_id) -> Page:
        """A page of someone who has an account (the shared world's password), at the table."""
        page = self.page()
        sign_in(page, username)
        open_table(page, campaign_id)
        return page

    def shot(self, page: Page, what: str) -> None:
        self.shots += 1
        screenshot(page, f"journey/{self.size}/{self.evening}{self.shots:02d}-{what}.png")

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


def settled(pages: tuple[Page, ...], said: str) -> None:
    """The GM has answered the latest turn that said `said`, and thinks of nothing else."""
    for page in pages:
        turn = page.locator("#feed > .turn:not(.undone)", has_text=said).last
        expect(turn.locator(".msg.role-gm:not(.streaming)").first).to_be_visible()
        expect(page.locator("#feed .thinking, #feed .msg.streaming")).to_have_count(0)


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_the_second_evening_held_calls_objection_rewind_redo_map_stop_and_every_card(
    live_world: World,
    openai_configured: FakeOpenAI,
    asgi_server: str,
    openai_worker,
    monkeypatch,
    size: str,
):
    world, fake = live_world, openai_configured
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="watchful")
    campaign_map_set(campaign=world.campaign, by=world.owner, background=png(64, 40))
    hp = {c.name: f'[data-creature="{c.pk}"] .hp-text' for c in (world.hero, world.orc)}
    goblin_hp = f'[data-creature="{world.goblin.pk}"] .hp-text'
    with chromium() as browser:
        journey = Journey(browser, asgi_server, size, evening="2-")
        owner, player, other = (
            journey.signed_in(who.username, world.campaign.pk)
            for who in (world.owner, world.player, world.other)
        )
        table = (owner, player, other)

        # The map the GM prepared: a background image under the grid, served to a member as
        # the image its header proved.
        image = player.locator("#map .map-background")
        expect(image).to_have_count(1)
        served = player.evaluate(
            """async (href) => {
                const answer = await fetch(href);
                return [answer.status, answer.headers.get("content-type")];
            }""",
            image.get_attribute("href"),
        )
        assert served == [200, "image/png"]
        journey.shot(player, "background")

        # A held call: the GM's blow to Thorin waits on a card, and the two turns sent after it
        # say what they wait for (not "The GM is thinking…").
        send(owner, "I attack Thorin")
        for page in table:
            expect(page.locator(".approval-card")).to_be_visible()
        send(other, "I look around the hall.")
        send(player, "I open the door.")
        for page in table:
            waiting = page.locator(".turn .waiting-approval")
            expect(waiting).to_have_count(3)
            expect(waiting.last).to_contain_text(
                "Waiting for approval: the GM’s modify creature call made in an earlier turn "
                "waits for owner or cogm to answer it, since"
            )
            expect(page.locator(".turn .thinking:not(.waiting-approval)")).to_have_count(0)
            journey.fits(page)
        expect(owner.locator("#approval-badge")).to_contain_text("1 waiting for you")
        journey.shot(other, "waiting-for-approval")

        # Thorin's player objects, with a reason: the call is rejected, the table moves on.
        held = player.locator(".approval-card")
        expect(held.get_by_role("button", name="Approve")).to_have_count(0)
        held.get_by_label("Why you object (shown to the table)").fill(
            "Thorin was behind the door all round"
        )
        journey.shot(player, "objection")
        held.get_by_role("button", name="Object").click()
        settled(table, "I open the door.")
        for page in table:
            expect(page.locator(".approval-card")).to_have_count(0)
            expect(page.locator(hp["Thorin"])).to_have_text("20 / 24")
        journey.shot(owner, "objected")

        # Three turns at once (nothing held now), then the owner rewinds all three after
        # reading the plan and redoes the first as it was.
        outside_the_browser_loop(
            lambda: Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="none")
        )
        send(player, "I attack the orc")
        for page in table:
            expect(page.locator(hp["Orc"])).not_to_have_text("15 / 15")
        settled(table, "I attack the orc")
        after_first = owner.locator(hp["Orc"]).inner_text()
        send(other, "move me to 3,4")
        for page in table:
            expect(token(page, "Lia")).to_have_attribute("data-x", "3")
        settled(table, "move me to 3,4")
        send(player, "I attack the orc")
        for page in table:
            expect(page.locator(hp["Orc"])).not_to_have_text(after_first)
        settled(table, "I attack the orc")
        first = owner.locator("#feed > .turn", has_text="I attack the orc").first
        first_block = f'#feed [data-turn="{first.get_attribute("data-turn")}"]'
        first.get_by_role("button", name="Rewind to here").click()
        dialog = owner.locator("#undo-dialog")
        expect(dialog.locator(".rewind-turns li")).to_have_text(
            [
                "player’s turn: ‘I attack the orc’",
                "other’s turn: ‘move me to 3,4’",
                "player’s turn: ‘I attack the orc’",
            ]
        )
        expect(dialog.locator(".undo-calls")).to_contain_text("Lia moves from 2,1 to 3,4")
        journey.shot(owner, "rewind-plan")
        undo_dialog(owner, "Rewind", "start the fight again")
        for page in table:
            expect(page.locator(hp["Orc"])).to_have_text("15 / 15")
            expect(page.locator("#feed > .turn.undone")).to_have_count(3)
            expect(token(page, "Lia")).to_have_attribute("data-x", "2")
            journey.fits(page)
        journey.shot(player, "rewound")
        owner.locator(first_block).get_by_role("button", name="Redo as it was").click()
        for page in table:
            redone = page.locator("#feed > .turn:not(.undone)", has_text="Redone: put back")
            expect(redone).to_have_count(1)
            expect(page.locator(hp["Orc"])).to_have_text(after_first)
            expect(page.locator(f"{first_block} .undo-note")).to_contain_text("redone below")
        journey.shot(player, "redone")

        # The map refuses a drag, and says why.
        press(player, player.locator(f'#map .map-token[data-creature="{world.ally.pk}"]'), size)
        expect(player.locator("#map .map-error")).to_have_text("Only its player can move Lia.")
        journey.shot(player, "refused-drag")

        # A fight: the GM's Next turn moves it on for everyone; players have no such button.
        send(player, "roll initiative")
        current = "#combat .initiative li.current .combatant"
        for page in table:
            expect(page.locator(current)).to_be_visible()
        settled(table, "roll initiative")
        expect(player.get_by_role("button", name="Next turn")).to_have_count(0)
        before = owner.locator(current).inner_text()
        press(owner, owner.get_by_role("button", name="Next turn"), size)
        for page in table:
            expect(page.locator(current)).not_to_have_text(before)
        journey.shot(owner, "gm-next-turn")
        press(owner, owner.get_by_role("button", name="End combat"), size)
        for page in table:
            expect(page.locator("#combat")).to_contain_text("No fight right now.")

        # Stop: a model at the GM's seat streams a long sentence; Thorin's player stops it
        # mid-sentence. The turn ends cancelled and its unfinished call never runs.
        owner.locator("#gm-seat").get_by_label("GM").select_option(label=SEAT)
        owner.get_by_role("button", name="Seat this GM").click()
        expect(owner.locator("#gm-seat")).to_contain_text(f"GM at this table: {SEAT}")
        live(owner)
        open_table(player, world.campaign.pk)  # the seat is not announced live: a fresh load
        expect(player.locator("#gm-seat")).to_contain_text(f"GM at this table: {SEAT}")
        world_before = outside_the_browser_loop(lambda: dump(world.campaign))
        fake.reply(*CHUNKS, calls=[hit(world)], pace=PACE)
        send(player, "I tell the goblin my life story.")
        for page in (owner, player):
            expect(page.locator(".msg.role-gm.streaming", has_text="word0")).to_be_visible()
        journey.shot(player, "gm-streaming")
        player.get_by_role("button", name="Stop the GM").click()
        for page in (owner, player):
            expect(page.locator(".msg.role-system").last).to_contain_text(
                "player stopped the GM on this turn"
            )
            expect(page.locator(".thinking, button.stop")).to_have_count(0)
            expect(page.locator(goblin_hp)).to_have_text("7 / 7")
        journey.shot(player, "gm-stopped")

        def stopped():
            turn = Turn.objects.filter(campaign=world.campaign).latest("pk")
            return turn.status, turn.invocations.count(), dump(world.campaign)

        assert outside_the_browser_loop(stopped) == (Turn.Status.CANCELLED, 0, world_before)
        assert fake.hung_up.wait(5), "the stream was not hung up"

        # Every tool's card, read by the owner and by Thorin's player: each in its tool's words.
        tools = outside_the_browser_loop(lambda: hold_every_tool(world, monkeypatch))
        for page in (owner, player):
            open_table(page, world.campaign.pk)
            cards = page.locator(".approval-card")
            expect(cards).to_have_count(len(tools))
            for index in range(len(tools)):
                text = cards.nth(index).inner_text()
                assert internal_words(text) == [], text
                assert text.startswith("Waiting for approval: ")
            journey.fits(page)
        expect(owner.locator(".approval-card h3", has_text="Combat starts:")).to_be_visible()
        journey.shot(owner, "every-tool-card-owner")
        journey.shot(player, "every-tool-card-player")

    objected = ToolInvocation.objects.get(campaign=world.campaign, status="rejected")
    assert objected.transitions.get().reason == (
        "player objected to this call: Thorin was behind the door all round"
    )
    assert Turn.objects.filter(campaign=world.campaign, redo_of__isnull=False).count() == 1
    lia = Creature.objects.get(pk=world.ally.pk)
    assert (lia.x, lia.y) == (world.ally.x, world.ally.y)  # the rewound move stays undone
