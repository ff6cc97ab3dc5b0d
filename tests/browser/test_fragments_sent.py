"""What a live GM turn costs the page in requests: the board comes down the socket (no `board/`
fetch after the page loaded, yet every page shows the change), and a turn is fetched again only
for an event its last drawing did not show: the GM's last message and the turn's end, committed
together, are one fetch, so no two answers for a turn are drawn at the same event number."""

import re
from collections import Counter
from typing import Any

import pytest
from playwright.sync_api import Page, Response, expect

from tests.browser.support import chromium, open_table, signed_in_page
from tests.browser.test_gm_turn_live import ATTACK, send
from tests.conftest import World
from tests.realtime.conftest import shared_layer

pytestmark = [pytest.mark.browser, shared_layer]

TURN_SEQ = re.compile(r'<li class="turn[^>]*? data-turn="(\d+)"[^>]*? data-seq="(\d+)"')


def recording(page: Page) -> dict[str, Any]:
    """The page's board fetches, and each turn drawing it was answered: (turn, data-seq)."""
    seen: dict[str, Any] = {"boards": 0, "turns": []}

    def answered(response: Response) -> None:
        if response.request.method != "GET" or not response.ok:
            return
        if response.url.endswith("/board/"):
            seen["boards"] += 1
        elif "/feed/?turn=" in response.url:
            seen["turns"].append(TURN_SEQ.match(response.text()).groups())

    page.on("response", answered)
    return seen


def test_a_gm_turn_sends_the_board_and_draws_each_turn_once_per_event(
    live_world: World, asgi_server: str, gm_workers
):
    world = live_world
    gm_workers(delay=0.3)
    with chromium() as browser:
        pages = [
            signed_in_page(browser, asgi_server, user.username)
            for user in (world.player, world.owner)
        ]
        for page in pages:
            open_table(page, world.campaign.pk)
        records = [recording(page) for page in pages]
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
        assert record["boards"] == 0
        assert record["turns"], "the turn was fetched"
        twice = [drawing for drawing, n in Counter(record["turns"]).items() if n > 1]
        assert twice == [], f"a turn fetched again for nothing new: {record['turns']}"
