"""A map that plays, in a real browser at 1280 px and at 390 px: a background image the GM
uploaded, drawn under the grid for the players; a refused drag says why; a stack offers a picker
of its tokens; the GM's Next turn and End combat buttons move the combat for everyone. The
screenshots are under the test artifacts (`map-plays/<size>/`)."""

import pytest
from playwright.sync_api import Browser, Page, expect

from audit.models import InvocationOrigin, ToolInvocation
from campaigns.services import campaign_map_set
from tests.browser.support import chromium, open_table, screenshot
from tests.browser.test_phone import assert_no_sideways_scroll
from tests.conftest import World, commit
from tests.images import png

pytestmark = pytest.mark.browser

SIZES = {
    "laptop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True},
}


def sign_in(browser: Browser, base_url: str, username: str, size: str) -> Page:
    page = browser.new_context(base_url=base_url, reduced_motion="reduce", **SIZES[size]).new_page()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-" + username)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base_url}/campaigns/")
    return page


def press(page: Page, locator, size: str) -> None:
    """A finger on a phone, the mouse on a laptop, at the middle of what is pressed (a token
    another person may not drag is `aria-disabled`, which Playwright's own click waits out)."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    middle = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    if size == "phone":
        page.touchscreen.tap(*middle)
    else:
        page.mouse.click(*middle)


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_background_refused_drag_stack_picker_and_the_gms_next_turn(
    live_world: World, asgi_server: str, size: str
):
    world = live_world
    campaign_map_set(campaign=world.campaign, by=world.owner, background=png(64, 40))
    commit(world, "move_token", {"creature_id": world.goblin.pk, "x": 3, "y": 2})
    commit(world, "move_token", {"creature_id": world.orc.pk, "x": 3, "y": 2})
    commit(world, "start_combat", {"creature_ids": [world.hero.pk, world.goblin.pk]})
    shots = f"map-plays/{size}"
    with chromium() as browser:
        player = sign_in(browser, asgi_server, world.player.username, size)
        owner = sign_in(browser, asgi_server, world.owner.username, size)
        for page in (player, owner):
            open_table(page, world.campaign.pk)

        # The background, served to a member with the type its content proved.
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
        screenshot(player, f"{shots}/01-background.png")

        # A refused drag says why.
        error = player.locator("#map .map-error")
        press(player, player.locator(f'#map .map-token[data-creature="{world.ally.pk}"]'), size)
        expect(error).to_be_visible()
        expect(error).to_have_text("Only its player can move Lia.")
        screenshot(player, f"{shots}/02-refused-drag.png")

        # A stack offers a picker; the one underneath can be chosen, and says why not.
        press(player, player.locator(f'#map .map-token[data-creature="{world.orc.pk}"]'), size)
        picker = player.locator("#map .map-picker")
        expect(picker).to_be_visible()
        expect(picker).to_contain_text("2 tokens on 3,2: pick one")
        screenshot(player, f"{shots}/03-stack-picker.png")
        picker.get_by_role("button", name="Goblin").click()
        expect(picker).to_be_hidden()
        expect(error).to_have_text("Only the GM can move Goblin.")
        if size == "phone":
            assert_no_sideways_scroll(player)

        # The GM's Next turn: the tracker moves on for everyone; players have no such button.
        expect(player.get_by_role("button", name="Next turn")).to_have_count(0)
        current = "#combat .initiative li.current .combatant"
        expect(player.locator(current)).to_have_text("Thorin")
        next_turn = owner.get_by_role("button", name="Next turn")
        press(owner, next_turn, size)
        for page in (owner, player):
            expect(page.locator(current)).to_have_text("Goblin")
        screenshot(owner, f"{shots}/04-gm-next-turn.png")
        press(owner, owner.get_by_role("button", name="End combat"), size)
        for page in (owner, player):
            expect(page.locator("#combat")).to_contain_text("No fight right now.")
        expect(owner.get_by_role("button", name="Next turn")).to_be_hidden()  # no fight: none
        screenshot(player, f"{shots}/05-combat-over.png")

    rows = ToolInvocation.objects.filter(source=InvocationOrigin.USER).order_by("sequence")
    assert [(r.tool_name, r.user, r.status) for r in rows] == [
        ("advance_turn", world.owner, ToolInvocation.Status.COMMITTED),
        ("end_combat", world.owner, ToolInvocation.Status.COMMITTED),
    ]
