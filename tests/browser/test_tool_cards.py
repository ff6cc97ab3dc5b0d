"""Every tool's approval card in a real browser, at 1280 and 390 px (issue 25): the GM's call
of each registered tool waits for approval at once, and each card reads in its tool's words —
no id, UUID, internal name or Python repr in what the owner or the player sees — with the raw
fields behind Details (the owner's only), and nothing scrolls sideways on a phone, a card's
raw fields opened included. Then the feed tells, live, of a token dragged and a creature added
through the set-up. Screenshots: tool-cards-*.png and feed-live-*.png under the test artifacts.
"""

from functools import partial

import pytest
from playwright.sync_api import expect

from ai_tools import registry
from ai_tools.base import resolve_refs
from audit.models import InvocationOrigin, ToolInvocation
from audit.services.hand import token_move
from campaigns.services import creature_create
from tests.ai_tools.examples import world_pk
from tests.browser.support import (
    ARTIFACTS,
    chromium,
    open_table,
    outside_the_browser_loop,
    screenshot,
)
from tests.browser.test_phone import LAPTOP, PHONE, assert_no_sideways_scroll, new_page, sign_in
from tests.conftest import World, call, commit
from tests.pages.readable import internal_words

pytestmark = pytest.mark.browser

SIZES = {"laptop": LAPTOP, "phone": PHONE}


def hold_every_tool(world: World, monkeypatch) -> list[str]:
    """The first example of every registered tool, called by the GM on the player's turn and
    held for approval (whatever its tier: the policy's own words for why); combat is started
    for real between `start_combat`'s card and the cards of the tools that need it."""
    holding = {"on": False}

    def held(campaign, tool, model, **_context):
        if holding["on"]:
            return f"{tool.name} is a {tool.tier} tool, and this table approves {tool.tier} calls."
        return None

    monkeypatch.setattr("audit.services.dispatch.needs_approval", held)
    names = sorted(registry.write_tools(), key=lambda t: (t.name != "start_combat", t.name))
    held_tools = []
    for tool in names:
        if "start_combat" in tool.example_setup and not world.campaign.active_encounter_id:
            first = registry.write_tool("start_combat").examples[0]
            commit(world, "start_combat", resolve_refs(first, partial(world_pk, world)))
            world.campaign.refresh_from_db()
        holding["on"] = True
        row = call(
            world,
            tool.name,
            resolve_refs(tool.examples[0], partial(world_pk, world)),
            actor=world.player,
            turn=world.turn(world.player, f"Go on ({tool.name})"),
            source=InvocationOrigin.GM,
            model="scripted/1",
        )
        holding["on"] = False
        assert row.status == ToolInvocation.Status.AWAITING_APPROVAL, (tool.name, row.error)
        held_tools.append(tool.name)
    return held_tools


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_every_tools_card_reads_in_words_and_fits(
    live_world: World, asgi_server: str, monkeypatch, size: str
):
    world = live_world
    tools = hold_every_tool(world, monkeypatch)
    with chromium() as browser:
        for who in (world.owner, world.player):
            page = new_page(browser, asgi_server, SIZES[size])
            sign_in(page, who.username)
            open_table(page, world.campaign.pk)
            cards = page.locator(".approval-card")
            expect(cards).to_have_count(len(tools))
            for index in range(len(tools)):
                text = cards.nth(index).inner_text()
                assert internal_words(text) == [], (who.username, text)
                assert text.startswith("Waiting for approval: ")
            expect(page.locator(".approval-card .approval-raw")).to_have_count(
                len(tools) if who == world.owner else 0
            )
            assert_no_sideways_scroll(page)
            screenshot(page, f"tool-cards-{size}-{who.username}.png")
            if who == world.owner:
                combat = cards.filter(has_text="Combat starts:")
                expect(combat.locator("h3")).to_contain_text(
                    "Combat starts: Goblin 15, Thorin 10 — in that order"
                )
                combat.get_by_text("Details").click()
                expect(combat.locator(".approval-diff")).to_be_visible()
                expect(combat.locator(".approval-raw")).to_contain_text("start_combat")
                assert_no_sideways_scroll(page)
                combat.scroll_into_view_if_needed()
                screenshot(page, f"tool-cards-{size}-details.png")
                combat.screenshot(path=ARTIFACTS / f"tool-card-{size}-start-combat.png")


def test_the_feed_tells_live_of_a_dragged_token_and_an_added_creature(
    live_world: World, asgi_server: str
):
    world = live_world
    with chromium() as browser:
        pages = {}
        for label, size in SIZES.items():
            pages[label] = new_page(browser, asgi_server, size)
            sign_in(pages[label], world.owner.username)
            open_table(pages[label], world.campaign.pk)
        outside_the_browser_loop(
            lambda: token_move(
                campaign=world.campaign, creature=world.hero, by=world.player, x=2, y=2
            )
        )
        outside_the_browser_loop(
            lambda: creature_create(
                campaign=world.campaign,
                by=world.owner,
                name="Wolf",
                kind="monster",
                hp=11,
                max_hp=11,
                x=4,
                y=2,
            )
        )
        for label, page in pages.items():
            feed = page.locator("#feed")
            expect(feed.locator(".change-entry").last).to_contain_text(
                "owner adds Wolf: a monster with 11 HP"
            )
            expect(feed).to_contain_text("player Thorin moves from 1,1 to 2,2")
            assert internal_words(feed.inner_text()) == []
            assert_no_sideways_scroll(page)
            screenshot(page, f"feed-live-{label}.png")
