"""A slow GM turn at a live table of two players: the box empties at once, both see that the GM
is thinking, the narration streams, the finished turn stays in view, and Undo then Retry reach
both browsers."""

import re

import pytest
from playwright.sync_api import Page, expect

from campaigns.models import Turn
from tests.browser.support import chromium, open_table, screenshot, signed_in_page
from tests.conftest import World
from tests.pages.test_campaign_page import gm_turn

# The worker's events reach the server's websockets through Redis, which the processes share.
pytestmark = pytest.mark.browser

ATTACK = "I attack the goblin"
# The scripted GM waits this long per round, as a model would think: an attack is two rounds.
ROUND_SECONDS = 2
# Whether the worker had claimed the turn yet when Stop was pressed.
STOPPED = re.compile(r"player (stopped the GM on|cancelled) this turn")


def send(page: Page, message: str) -> None:
    box = page.get_by_label("Your message to the table")
    box.fill(message)
    page.get_by_role("button", name="Send").click()
    # Long before the GM's first round ends, the box is empty and Send ready again.
    expect(box).to_have_value("", timeout=ROUND_SECONDS * 1000 // 2)
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=ROUND_SECONDS * 500)


def watch_the_gm_answer(pages: tuple[Page, ...], turn: str, name: str) -> None:
    """Thinking note in view, then the narration streaming in its place, then the finished
    turn, for every page."""
    for page in pages:
        expect(page.locator(f"{turn} .thinking")).to_be_in_viewport()
        expect(page.locator(f"{turn} .thinking")).to_have_text("The GM is thinking…")
    screenshot(pages[-1], f"gm-turn-{name}-thinking.png")
    for page in pages:
        expect(page.locator(f"{turn} .msg.streaming")).to_be_in_viewport()
        expect(page.locator(f"{turn} .thinking")).to_have_count(0)
    screenshot(pages[0], f"gm-turn-{name}-streaming.png")
    for page in pages:
        expect(page.locator(f"{turn} .msg.role-gm:not(.streaming)")).to_contain_text(
            "strikes Goblin"
        )
        expect(page.locator(f"{turn} .msg.role-gm")).to_be_in_viewport()
        expect(page.locator(f"{turn} .call .summary")).to_contain_text("Goblin takes")
        expect(page.locator(".msg.streaming, .thinking, button.stop")).to_have_count(0)


def test_a_slow_gm_turn_then_its_undo_and_retry_live_for_two_players(
    live_world: World, asgi_server: str, gm_workers
):
    world = live_world
    for number in range(12):  # a feed longer than its panel: new turns must be scrolled to
        gm_turn(world, f"Earlier table talk {number}.", narration="The GM answers at length. " * 6)
    gm_workers(delay=ROUND_SECONDS)
    with chromium() as browser:
        player = signed_in_page(browser, asgi_server, world.player.username)
        other = signed_in_page(browser, asgi_server, world.other.username)
        both = (player, other)
        for page in both:
            open_table(page, world.campaign.pk)

        send(player, ATTACK)
        expect(player.locator("button.stop")).to_be_visible()  # the actor may stop it
        expect(other.locator("button.stop")).to_have_count(0)  # another player may not
        watch_the_gm_answer(both, "#feed > .turn:last-child", "first")
        undo = player.locator(".turn:last-child").get_by_role("button", name="Undo this turn")
        expect(undo).to_be_in_viewport()
        expect(other.locator("button.undo")).to_have_count(0)
        screenshot(player, "gm-turn-first-done.png")

        undo.click()
        dialog = player.locator("#undo-dialog")
        expect(dialog.locator(".undo-calls")).to_contain_text("Goblin takes")
        dialog.get_by_label("Why are you undoing it?").fill("let the dice speak again")
        dialog.get_by_role("button", name="Undo turn").click()
        expect(dialog).to_be_hidden()
        for page in both:
            expect(page.locator("#feed .undo-note")).to_contain_text("let the dice speak again")
            expect(page.locator("#feed").get_by_text(ATTACK)).to_be_hidden()  # folded in its line
        retry = player.get_by_role("button", name="Retry this turn")
        expect(retry).to_be_in_viewport()
        expect(other.locator("button.retry")).to_have_count(0)
        screenshot(player, "gm-turn-undone.png")

        retry.click()
        again = ".turn[data-retry-of]"
        for page in both:
            expect(page.locator(f"{again} .msg.role-player .text")).to_have_text(ATTACK)
        watch_the_gm_answer(both, again, "retry")
        for page in both:
            expect(page.locator(".undo-note")).to_contain_text("retried below")
            expect(page.locator("button.retry")).to_have_count(0)
        expect(player.locator(f"{again} button.undo")).to_be_in_viewport()
        screenshot(other, "gm-turn-retried.png")

    retried = Turn.objects.select_related("retry_of").get(retry_of__isnull=False)
    first = retried.retry_of
    assert first.reverted_by == world.player and first.revert_reason == "let the dice speak again"
    assert (retried.actor, retried.status, retried.reverted_at) == (
        world.player,
        Turn.Status.COMPLETED,
        None,
    )


def test_the_actor_stops_a_slow_gm_turn_and_both_players_see_it_stopped(
    live_world: World, asgi_server: str, gm_workers
):
    world = live_world
    gm_workers(delay=ROUND_SECONDS)
    with chromium() as browser:
        player = signed_in_page(browser, asgi_server, world.player.username)
        other = signed_in_page(browser, asgi_server, world.other.username)
        for page in (player, other):
            open_table(page, world.campaign.pk)

        send(player, "We take a long rest")
        expect(other.locator(".thinking")).to_be_in_viewport()
        player.get_by_role("button", name="Stop the GM").click()
        for page in (player, other):
            expect(page.locator(".msg.role-system")).to_contain_text(STOPPED)
            expect(page.locator(".thinking, button.stop")).to_have_count(0)
        screenshot(other, "gm-turn-stopped.png")

    turn = Turn.objects.get(campaign=world.campaign)
    assert (turn.status, turn.cancel_requested_by) == (Turn.Status.CANCELLED, world.player)
