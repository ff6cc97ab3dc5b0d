"""axe-core finds no violation at all, of any impact, on the pages a group meets: sign-up, an
invite link (signed out and signed in), the campaign page for the GM and for a player (in
combat, a fallen creature, a stack, a background image, the GM's hand open) and the admin
console (its index, the log and a call), at 1280 px and at 390 px."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import reverse
from playwright.sync_api import Browser, Page, expect

from audit.models import ToolInvocation
from campaigns.services import campaign_map_set, invite_create
from tests.browser.support import chromium, open_table, screenshot
from tests.browser.test_map_plays import SIZES, sign_in
from tests.conftest import World, commit, make_user
from tests.images import png

pytestmark = pytest.mark.browser


def violations(page: Page) -> list[tuple[str, str, list]]:
    found = Axe().run(page).response["violations"]
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in found]


def assert_clean(page: Page, name: str, size: str) -> None:
    screenshot(page, f"axe/{size}/{name}.png")
    found = violations(page)
    assert found == [], f"{name} at {size}: {page.url}: {found}"


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_no_axe_violation_on_the_campaign_sign_up_invite_and_admin_pages(
    live_world: World, asgi_server: str, size: str
):
    from datetime import timedelta

    from django.contrib.auth.models import Permission

    world = live_world
    campaign_map_set(campaign=world.campaign, by=world.owner, background=png(32, 20))
    commit(world, "move_token", {"creature_id": world.orc.pk, "x": 5, "y": 5})  # a stack
    commit(world, "start_combat", {"creature_ids": [world.hero.pk, world.goblin.pk, world.orc.pk]})
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -7})  # down
    _, token = invite_create(
        campaign=world.campaign, by=world.owner, expires_in=timedelta(hours=1), max_uses=3
    )
    staff = make_user("staff", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_toolinvocation"))
    call = ToolInvocation.objects.order_by("-sequence").first()
    invite_path = reverse("invite_accept", args=[token])
    with chromium() as browser:
        visitor = browser.new_context(base_url=asgi_server, **SIZES[size]).new_page()
        visitor.goto("/accounts/signup/")
        assert_clean(visitor, "sign-up", size)
        visitor.get_by_label("Username").fill("newcomer")
        visitor.get_by_role("button", name="Create account").click()  # refused: no password
        expect(visitor.locator(".form-error").first).to_be_visible()
        assert_clean(visitor, "sign-up-refused", size)
        visitor.goto(invite_path)
        expect(visitor.get_by_role("link", name="Sign up to join")).to_be_visible()
        assert_clean(visitor, "invite-signed-out", size)

        player = sign_in(browser, asgi_server, world.other.username, size)
        player.goto(invite_path)
        assert_clean(visitor, "invite-member", size)
        open_table(player, world.campaign.pk)
        assert_clean(player, "campaign-player", size)

        owner = sign_in(browser, asgi_server, world.owner.username, size)
        open_table(owner, world.campaign.pk)
        for block in owner.locator("#hand details, #setup details").all():
            block.evaluate("(details) => { details.open = true; }")
        assert_clean(owner, "campaign-gm", size)

        admin = browser_admin(browser, asgi_server, size)
        for name, path in (
            ("admin-index", "/admin/"),
            ("admin-log", "/admin/audit/toolinvocation/"),
            ("admin-call", f"/admin/audit/toolinvocation/{call.pk}/change/"),
        ):
            admin.goto(path)
            assert_clean(admin, name, size)


def browser_admin(browser: Browser, base_url: str, size: str) -> Page:
    page = browser.new_context(base_url=base_url, **SIZES[size]).new_page()
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("staff")
    page.get_by_label("Password").fill("pw-staff")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base_url}/admin/")
    return page
