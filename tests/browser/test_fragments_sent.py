"""What a live GM turn costs the page in requests: none, a call of it held and answered
included. The board, the turn and the approval card come down the socket (no `board/`,
`feed/?turn=` or `approvals/` fetch after the page loaded, yet every page shows the change),
and a turn is drawn again only for an event its last drawing did not show: the GM's last
message and the turn's end, committed together, are one drawing, so no two drawings of a turn
that reach a page are drawn at the same event number."""

import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from playwright.sync_api import Page, Response, WebSocketRoute, expect

from audit.services.hand import token_move
from audit.services.revert import invocation_revert
from campaigns.models import Campaign, DiceRoll
from tests.browser.support import chromium, open_table, outside_the_browser_loop, signed_in_page
from tests.browser.test_gm_turn_live import ATTACK, send
from tests.conftest import World
from tests.servers import WorkerProcess

pytestmark = pytest.mark.browser

TURN_SEQ = re.compile(r'<li class="turn[^>]*? data-turn="(\d+)"[^>]*? data-seq="(\d+)"')
STATUS = re.compile(r'<li class="turn[^>]*? data-status="(\w+)"')


def recording(page: Page) -> dict[str, Any]:
    """The page's board, turn and approval card fetches (the card's first, on load, included),
    the boards, turns and cards its socket brought, each turn
    drawing that reached it, (turn, data-seq), and of each sent, whether it shows the turn
    waiting for approval, and its status."""
    seen: dict[str, Any] = {
        "fetched": Counter(),
        "sent": Counter(),
        "turns": [],
        "held": [],
        "status": [],
    }

    def answered(response: Response) -> None:
        if response.request.method != "GET" or not response.ok:
            return
        if response.url.endswith("/board/"):
            seen["fetched"]["board"] += 1
        elif response.url.endswith("/approvals/"):
            seen["fetched"]["approvals"] += 1
        elif "/feed/?roll=" in response.url:
            seen["fetched"]["roll"] += 1
        elif "/feed/?change=" in response.url:
            seen["fetched"]["change"] += 1
        elif "/feed/?turn=" in response.url:
            seen["fetched"]["turn"] += 1
            seen["turns"].append(TURN_SEQ.match(response.text()).groups())

    def received(payload: str | bytes) -> None:
        message = json.loads(payload)
        if message["type"] == "fragment":
            seen["sent"][message["part"]] += 1
            if message["part"] == "turn":
                seen["turns"].append(TURN_SEQ.match(message["html"]).groups())
                seen["held"].append("waiting-approval" in message["html"])
                seen["status"].append(STATUS.match(message["html"])[1])

    page.on("response", answered)
    page.on("websocket", lambda socket: socket.on("framereceived", received))
    return seen


def test_a_gm_turn_costs_the_page_no_request(live_world: World, asgi_server: str, gm_workers):
    world = live_world
    gm_workers(delay=0.3)
    with chromium() as browser:
        pages = [
            signed_in_page(browser, asgi_server, user.username)
            for user in (world.player, world.owner)
        ]
        records = [recording(page) for page in pages]
        for page in pages:
            open_table(page, world.campaign.pk)
        hp = pages[0].locator(f'li.creature[data-creature="{world.goblin.pk}"] .hp-text')
        before = hp.first.text_content()

        send(pages[0], ATTACK)
        for page in pages:
            turn = page.locator("#feed > .turn:last-child")
            expect(turn.locator(".msg.role-gm:not(.streaming)")).to_contain_text("strikes Goblin")
            expect(turn.locator(".call .summary")).to_contain_text("Goblin takes")
            goblin = page.locator(f'li.creature[data-creature="{world.goblin.pk}"] .hp-text').first
            expect(goblin).not_to_have_text(before)  # the board the socket brought
        for page in pages:
            page.wait_for_load_state("networkidle")

    for record in records:
        assert record["fetched"] == Counter(approvals=1), "nothing fetched after the page loaded"
        assert record["sent"]["board"] >= 1
        # Drawings coalesce (one on its way, one more after it), so a turn made and done may
        # come as one drawing: what must come last is a drawing of it done.
        assert record["status"][-1] == "completed", record["status"]
        twice = [drawing for drawing, n in Counter(record["turns"]).items() if n > 1]
        assert twice == [], f"a turn drawn again for nothing new: {record['turns']}"


def test_a_held_call_and_its_answer_cost_the_page_no_turn_request(
    live_world: World, asgi_server: str, gm_worker: WorkerProcess
):
    """The GM's critical hit is held, then approved: each page's turn says what it waits for,
    then the hit and the GM's reply, every drawing of it sent down the socket; the approval card
    too, which appears and goes on both pages with no fetch but the page's first and the one
    the owner's answer makes."""
    with owner_and_player(live_world, asgi_server) as (owner, player):
        records = [recording(page) for page in (owner, player)]
        for page in (owner, player):
            open_table(page, live_world.campaign.pk)
        held_and_answered(owner, player)
        for page in (owner, player):
            page.wait_for_load_state("networkidle")

    for record in records:
        # The hold, its answer and the resumed attempt are sent, not fetched: every drawing of
        # the turn has the streaming slot until the one of it done, which is newer than any of
        # its words, whenever it arrives (feed.js, `wordsAskFor`).
        assert record["fetched"]["board"] == 0
        assert record["fetched"]["turn"] == 0, record["fetched"]
        assert record["sent"]["approvals"] >= 2, record["sent"]  # held, then answered
        # Drawings coalesce (one on its way, one more after it), so a turn made and held at
        # once may come as one drawing: what must come is a drawing of it held, then a later one
        # of it answered.
        held = record["held"]
        assert True in held, f"no drawing of the held turn was sent: {held}"
        assert False in held[held.index(True) :], f"no drawing after the answer was sent: {held}"
    owners, players = (record["fetched"]["approvals"] for record in records)
    assert (owners, players) == (2, 1), "the card: fetched on load, and after the owner's answer"


@contextmanager
def owner_and_player(world: World, asgi_server: str) -> Iterator[tuple[Page, Page]]:
    """The owner's page and the player's, signed in, at a table where the GM's critical calls
    wait for approval."""
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    with chromium() as browser:
        owner, player = (
            signed_in_page(browser, asgi_server, user.username)
            for user in (world.owner, world.player)
        )
        yield owner, player


def held_and_answered(owner: Page, player: Page) -> None:
    """The player attacks, the GM's critical hit is held, and the owner approves it: both pages
    show the turn waiting, then the GM's reply."""
    send(player, "I attack the goblin")
    for page in (owner, player):
        expect(page.locator(".approval-card")).to_be_visible()
        expect(page.locator("#feed > .turn:last-child .waiting-approval")).to_contain_text(
            "Waiting for approval"
        )
    owner.locator(".approval-card").get_by_role("button", name="Approve").click()
    for page in (owner, player):
        expect(page.locator(".approval-card")).to_have_count(0)
        turn = page.locator("#feed > .turn:last-child")
        expect(turn.locator(".msg.role-gm:not(.streaming)")).to_contain_text("Goblin")
        expect(turn.locator(".waiting-approval")).to_have_count(0)


# Counts the page's requests for a turn as it makes them (Playwright hears of a request only
# after the page made it).
COUNT_TURN_FETCHES = """
window.turnFetches = 0;
const fetchFromServer = window.fetch;
window.fetch = (url, ...options) => {
  if (String(url).includes("/feed/?turn=")) window.turnFetches += 1;
  return fetchFromServer(url, ...options);
};
"""


class WordsAfterTheirTurnIsDone:
    """Between the server and a page: from the first word the GM streams once the page has the
    turn waiting for approval (the resumed attempt's), that event and every later one wait
    until a drawing of the turn done has reached the page, as on a busy host, where the server
    (drawing off its receive loop) can draw the turn after its end and send it before the
    worker's words reach the page. An earlier event arriving late (another process published
    it) is not held: the page would wait for it, then reload the feed. `late`: the words the
    page was given after that drawing."""

    def __init__(self) -> None:
        self.waiting = False  # the page has the turn waiting for approval
        self.first_held: int | None = None  # the number of the first word held
        self.held: list[str] = []
        self.done = False  # the page has the turn done
        self.late = 0

    def __call__(self, socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()
        socket.on_message(server.send)
        server.on_message(lambda text: self.passing(socket, str(text)))

    def passing(self, socket: WebSocketRoute, text: str) -> None:
        message = json.loads(text)
        if self.holds(message):
            self.held.append(text)
            return
        self.give(socket, text, message)
        drawn = message["type"] == "fragment" and message["part"] == "turn" and message["html"]
        if drawn and not self.done:
            self.waiting = self.waiting or "waiting-approval" in message["html"]
            self.done = STATUS.match(message["html"])[1] == "completed"
            for held in self.held if self.done else []:
                self.give(socket, held, json.loads(held))

    def holds(self, message: dict[str, Any]) -> bool:
        if message["type"] == "fragment" or not self.waiting or self.done:
            return False
        if self.first_held is None and message["type"] == "gm_text_delta":
            self.first_held = message["seq"]
        return self.first_held is not None and message["seq"] >= self.first_held

    def give(self, socket: WebSocketRoute, text: str, message: dict[str, Any]) -> None:
        socket.send(text)
        self.late += self.done and message["type"] == "gm_text_delta"

    def wait_for_done(self, page: Page) -> None:
        """Until the drawing of the turn done has passed (the page may have shown the turn
        done already, from a reload of the feed after a gap)."""
        for _ in range(400):
            if self.done:
                return
            page.wait_for_timeout(50)
        raise AssertionError(f"no drawing of the turn done reached the page: {vars(self)}")


def test_words_that_reach_the_page_after_their_turn_done_cost_it_no_request(
    live_world: World, asgi_server: str, gm_worker: WorkerProcess
):
    """The resumed attempt's words reach each page after the drawing of the turn done (held
    back here; on a busy host, by the time it takes): that drawing has no slot for them and is
    as new as the page can ask for, so they fetch nothing (they fetched the same drawing again,
    once or more, as timing had it)."""
    with owner_and_player(live_world, asgi_server) as (owner, player):
        routes = [WordsAfterTheirTurnIsDone() for _ in (owner, player)]
        for page, route in zip((owner, player), routes, strict=True):
            page.add_init_script(COUNT_TURN_FETCHES)
            page.route_web_socket("**/ws/campaigns/**", route)
            open_table(page, live_world.campaign.pk)
        held_and_answered(owner, player)
        for page, route in zip((owner, player), routes, strict=True):
            route.wait_for_done(page)
            assert route.late > 0, f"no word reached the page after its turn done: {vars(route)}"
            assert page.evaluate("window.turnFetches") == 0
            turn = page.locator("#feed > .turn:last-child")
            expect(turn.locator(".msg.role-gm:not(.streaming)")).to_contain_text("Goblin")


def test_a_roll_and_a_drag_cost_the_pages_no_request(live_world: World, asgi_server: str):
    """A player's roll, a token dragged and its undo: every page draws each entry the socket
    brought (the roller's too), and fetches none."""
    world = live_world
    with chromium() as browser:
        pages = [
            signed_in_page(browser, asgi_server, user.username)
            for user in (world.player, world.owner, world.other)
        ]
        records = [recording(page) for page in pages]
        for page in pages:
            open_table(page, world.campaign.pk)
        pages[0].get_by_label("Dice", exact=True).fill("2d6+3")
        pages[0].get_by_role("button", name="Roll").click()
        expect(pages[0].locator("#feed .roll-entry")).to_have_count(1)
        roll = outside_the_browser_loop(DiceRoll.objects.get)
        for page in pages:
            expect(page.locator(f'#feed [data-roll="{roll.pk}"] .total')).to_have_text(
                str(roll.total)
            )
        dragged = outside_the_browser_loop(
            lambda: token_move(
                campaign=world.campaign, creature=world.hero, by=world.player, x=2, y=2
            )
        )
        entry = f'#feed > [data-change="{dragged.pk}"]'
        for page in pages:
            expect(page.locator(entry)).to_contain_text("Thorin moves from 1,1 to 2,2")
        outside_the_browser_loop(
            lambda: invocation_revert(
                campaign_id=world.campaign.pk, invocation_id=dragged.pk, user=world.player
            )
        )
        for page in pages:
            expect(page.locator(entry)).to_contain_text("undone")
            expect(page.locator(entry)).to_have_count(1)
            page.wait_for_load_state("networkidle")

    for record in records:
        assert record["fetched"]["roll"] == 0 and record["fetched"]["change"] == 0
        assert record["sent"]["roll"] == 1 and record["sent"]["change"] == 2
