"""The pages on a phone (390×844, touch) and on a laptop (1280×800): nothing scrolls sideways,
the campaign's title and the live pill stay clear of each other and of the user name, the
message box and Send sit inside the screen, a message sent from the phone reaches the feed, and
axe finds no serious or critical violation on the sign-in, campaign list and campaign pages."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from tests.browser.support import (
    ARTIFACTS,
    chromium,
    open_table,
    outside_the_browser_loop,
    screenshot,
)
from tests.conftest import World, commit

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
LAPTOP = {"viewport": {"width": 1280, "height": 800}}
SIZES = {"phone": PHONE, "laptop": LAPTOP}


def new_page(browser: Browser, base_url: str, size: dict) -> Page:
    return browser.new_context(base_url=base_url, reduced_motion="reduce", **size).new_page()


def sign_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-" + username)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url("/campaigns/")


def assert_no_sideways_scroll(page: Page) -> None:
    """The document is exactly as wide as the screen the context was given. (A phone browser
    widens its layout viewport to fit wide content, so window.innerWidth alone proves nothing.)"""
    screen = page.viewport_size["width"]
    scroll_width, inner_width, wide = page.evaluate(
        "(screen) => [document.documentElement.scrollWidth, window.innerWidth, "
        "[...document.querySelectorAll('body *')].filter(e => "
        "e.getBoundingClientRect().right > screen + 0.5 && "
        "!e.closest('.map-frame, dialog:not([open]), .visually-hidden, template')"
        ").slice(0, 5).map(e => `${e.tagName}#${e.id}.${e.className}[${e.name || ''}]`)]",
        screen,
    )
    assert (scroll_width, inner_width) == (screen, screen), f"{page.url} scrolls sideways"
    assert wide == [], f"{page.url}: elements past the right edge: {wide}"


def assert_axe_clean(page: Page) -> None:
    violations = Axe().run(page).response["violations"]
    serious = [
        (v["id"], [n["target"] for n in v["nodes"]][:3])
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == [], f"{page.url}: {serious}"


def boxes_overlap(a: dict, b: dict) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def assert_top_bar_readable(page: Page) -> None:
    title = page.locator(".campaign-title")
    expect(title).to_be_visible()
    expect(title).to_have_text("The Sunken Keep")
    title_box = title.bounding_box()
    assert title_box["width"] >= 80, f"the title is squeezed to {title_box['width']} px"
    # The whole title fits: not cut off with an ellipsis.
    assert title.evaluate("h => h.scrollWidth <= h.clientWidth")
    pill = page.locator("#live").bounding_box()
    name = page.locator(".whoami strong").bounding_box()
    assert not boxes_overlap(title_box, pill), (title_box, pill)
    assert not boxes_overlap(pill, name), (pill, name)
    assert not boxes_overlap(title_box, name), (title_box, name)


def assert_composer_on_screen(page: Page) -> None:
    """The message box and Send lie inside the viewport without any scrolling."""
    height = page.viewport_size["height"]
    for part in (
        page.get_by_label("Your message to the table"),
        page.get_by_role("button", name="Send"),
    ):
        expect(part).to_be_visible()
        box = part.bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= height, (box, height)


def test_sign_in_and_sign_up_fit_a_phone_and_pass_axe(asgi_server: str):
    with chromium() as browser:
        for label, size in SIZES.items():
            page = new_page(browser, asgi_server, size)
            page.goto("/accounts/login/")
            assert_no_sideways_scroll(page)
            assert_axe_clean(page)
            screenshot(page, f"phone-sign-in-{label}.png")
            page.goto("/accounts/signup/")
            assert_no_sideways_scroll(page)
            assert_axe_clean(page)
            screenshot(page, f"phone-sign-up-{label}.png")


@pytest.mark.parametrize("size", ["phone", "laptop"])
def test_owner_and_player_pages_fit_and_pass_axe(live_world: World, asgi_server: str, size: str):
    world = live_world
    commit(world, "start_combat", {"creature_ids": [world.goblin.pk, world.hero.pk]})
    with chromium() as browser:
        for who in (world.owner, world.player):
            page = new_page(browser, asgi_server, SIZES[size])
            sign_in(page, who.username)
            assert_no_sideways_scroll(page)
            assert_axe_clean(page)
            screenshot(page, f"phone-list-{size}-{who.username}.png")
            open_table(page, world.campaign.pk)
            expect(page.locator("#combat .init").first).to_be_visible()
            assert_no_sideways_scroll(page)
            assert_top_bar_readable(page)
            assert_composer_on_screen(page)
            assert_axe_clean(page)
            screenshot(page, f"phone-table-{size}-{who.username}.png")


def test_a_message_sent_from_a_phone_reaches_the_feed(live_world: World, asgi_server: str):
    world = live_world
    with chromium() as browser:
        phone = new_page(browser, asgi_server, PHONE)
        sign_in(phone, world.player.username)
        open_table(phone, world.campaign.pk)
        assert_composer_on_screen(phone)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        phone.screenshot(path=ARTIFACTS / "phone-table-first-screen.png")  # what the thumb sees
        phone.get_by_label("Your message to the table").tap()
        phone.get_by_label("Your message to the table").fill("I light a torch")
        phone.get_by_role("button", name="Send").tap()
        expect(phone.locator("#feed .msg.role-player .text")).to_have_text("I light a torch")
        expect(phone.get_by_label("Your message to the table")).to_have_value("")
        chat_link = phone.get_by_role("link", name="Chat")
        chat_link.tap()
        expect(phone.locator("#feed .msg.role-player").last).to_be_in_viewport()
        phone.screenshot(path=ARTIFACTS / "phone-table-chat-screen.png")
    said = outside_the_browser_loop(
        lambda: list(world.campaign.messages.values_list("content", flat=True))
    )
    assert "I light a torch" in said
