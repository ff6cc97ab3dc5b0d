"""The admin's changelists fit a 1280 px screen: no sideways scrolling to reach a column."""

import pytest
from django.contrib.auth.models import Permission

from audit.models import SecurityEvent
from tests.browser.support import chromium, screenshot, signed_in_page
from tests.conftest import World, call, make_user

pytestmark = pytest.mark.browser

# The page's width, and how far the list's table overflows its box (the admin scrolls the table
# inside the page rather than the page itself).
OVERFLOW = """() => {
    const box = document.querySelector(".results");
    return {page: document.documentElement.scrollWidth, table: box.scrollWidth - box.clientWidth};
}"""
CHANGELISTS = (
    "/admin/audit/toolinvocation/",
    "/admin/campaigns/turn/",
    "/admin/audit/securityevent/",
    "/admin/campaigns/campaign/",
)


def a_busy_log(world: World) -> None:
    """Calls with every column filled as wide as it gets in play: a call the owner made into a
    player's turn, a long model name, a failure, a refusal in the security log."""
    turn = world.turn(world.player)
    for _ in range(3):
        call(
            world,
            "modify_creature",
            {"creature_id": world.goblin.pk, "hp_delta": -1, "add_conditions": ["frightened"]},
            actor=world.player,
            requested_by=world.owner,
            turn=turn,
            model="claude-sonnet-4-5-20250929",
            source="api",
        )
    call(world, "consume_resource", {"creature_id": world.hero.pk}, turn=turn, model="scripted")
    SecurityEvent.objects.create(
        kind=SecurityEvent.Kind.TOOL_CALL_DENIED,
        user=world.other,
        campaign=world.campaign,
        target="modify_creature",
        ip="2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
    )


def test_every_changelist_fits_1280_px(live_world: World, asgi_server: str):
    world = live_world
    a_busy_log(world)
    staff = make_user("warden", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="revert_toolinvocation"))
    widths = {}
    with chromium() as browser:
        page = signed_in_page(browser, asgi_server, staff.username)
        page.set_viewport_size({"width": 1280, "height": 800})
        for url in CHANGELISTS:
            page.goto(url)
            assert page.locator("#result_list tbody tr").count() >= 1, url
            widths[url] = page.evaluate(OVERFLOW)
        page.goto(CHANGELISTS[0])
        screenshot(page, "admin-invocations-1280.png")
    assert widths == dict.fromkeys(CHANGELISTS, {"page": 1280, "table": 0})
