"""What a live GM turn costs the page in requests: none, a call of it held and answered
included. The board, the turn and the approval card come down the socket (no `board/`,
`feed/?turn=` or `approvals/` fetch after the page loaded, yet every page shows the change),
and a turn is drawn again only for an event its last drawing did not show: the GM's last
message and the turn's end, committed together, are one drawing, so no two drawings of a turn
that reach a page are drawn at the same event number."""

import json
import re
from collections import Counter
from typing import Any

import pytest
from playwright.sync_api import Page, Response, expect

from audit.services.hand import token_move
from audit.services.revert import invocation_revert
from campaigns.models import Campaign, DiceRoll
from tests.browser.support import chromium, open_table, outside_the_browser_loop, signed_in_page
from tests.browser.test_gm_turn_live import ATTACK, send
from tests.conftest import World
from tests.servers import WorkerProcess

pytestmark = pytest.mark.browser

TURN_SEQ = re.compile(r'<li class="turn[^>]*? data-turn="(\d+)"[^>]*? data-seq="(\d+)"')


def recording(page: Page) -> dict[str, Any]:
    """The page's board, turn and approval card fetches (the card's first, on load, included),
    the boards, turns and cards its socket brought, each turn
    drawing that reached it, (turn, data-seq), and of each sent, whether it shows the turn
    waiting for approval."""
    seen: dict[str, Any] = {"fetched": Counter(), "sent": Counter(), "turns": [], "held": []}

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
        assert record["sent"]["board"] >= 1 and record["sent"]["turn"] >= 2  # made, then done
        twice = [drawing for drawing, n in Counter(record["turns"]).items() if n > 1]
        assert twice == [], f"a turn drawn again for nothing new: {record['turns']}"


def test_a_held_call_and_its_answer_cost_the_page_no_turn_request(
    live_world: World, asgi_server: str, gm_worker: WorkerProcess
):
    """The GM's critical hit is held, then approved: each page's turn says what it waits for,
    then the hit and the GM's reply, every drawing of it sent down the socket; the approval card
    too, which appears and goes on both pages with no fetch but the page's first and the one
    the owner's answer makes."""
    world = live_world
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    with chromium() as browser:
        owner, player = (
            signed_in_page(browser, asgi_server, user.username)
            for user in (world.owner, world.player)
        )
        records = [recording(page) for page in (owner, player)]
        for page in (owner, player):
            open_table(page, world.campaign.pk)
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
        for page in (owner, player):
            page.wait_for_load_state("networkidle")

    for record in records:
        # The hold, its answer and the resumed attempt are sent, not fetched; the resumed
        # narration's first word may still fetch the turn once, when the drawing sent was made
        # before the worker started it again (no streaming slot yet: feed.js, gm_text_delta).
        assert record["fetched"]["board"] == 0
        assert record["fetched"]["turn"] <= 1, record["fetched"]
        assert record["sent"]["approvals"] >= 2, record["sent"]  # held, then answered
        # Drawings coalesce (one on its way, one more after it), so a turn made and held at
        # once may come as one drawing: what must come is a drawing of it held, then a later one
        # of it answered.
        held = record["held"]
        assert True in held, f"no drawing of the held turn was sent: {held}"
        assert False in held[held.index(True) :], f"no drawing after the answer was sent: {held}"
    owners, players = (record["fetched"]["approvals"] for record in records)
    assert (owners, players) == (2, 1), "the card: fetched on load, and after the owner's answer"


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
