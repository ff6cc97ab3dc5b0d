"""Any model at the GM's seat, in a real browser: a table that played with the scripted GM seats
an OpenAI-compatible model (the strict local fake of the Chat Completions API,
tests/gm/fake_openai.py) from its page; a turn with a tool call streams its narration, is held,
approved on the card and undone, live on both pages; then the admin's analytics show the two
models side by side (screenshot: `openai-models-compared.png` under the test artifacts)."""

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect

from audit.models import ToolInvocation
from campaigns.models import Campaign, Creature, Turn
from tests.browser.support import at_the_table, chromium, outside_the_browser_loop, screenshot
from tests.browser.support import signed_in_page as sign_in
from tests.conftest import World, make_user
from tests.gm.fake_openai import VERSION, FakeOpenAI, call

pytestmark = pytest.mark.browser
SEAT = "OpenAI-compatible (gpt-gm-test)"


def test_a_table_seats_an_openai_compatible_gm_which_streams_is_approved_and_undone(
    live_world: World, openai_configured: FakeOpenAI, asgi_server: str, openai_worker
):
    world, fake = live_world, openai_configured
    goblin_hp = f'[data-creature="{world.goblin.pk}"] .hp-text'
    hit = call("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5})
    fake.reply("Thorin ", "lunges ", "at the goblin. ", calls=[hit], pace=0.2)
    fake.reply("The goblin howls and staggers back.")
    with chromium() as browser:
        owner, player = at_the_table(
            browser, asgi_server, world.campaign.pk, world.owner.username, world.player.username
        )
        # A scripted turn first: the table's record of the scripted GM.
        expect(player.locator("#gm-seat")).to_contain_text("Scripted GM — understands a few")
        player.get_by_label("Your message to the table").fill("we take a long rest")
        player.get_by_role("button", name="Send").click()
        expect(player.locator(".msg.role-gm").last).to_be_visible()

        outside_the_browser_loop(
            lambda: Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
        )
        owner.locator("#gm-seat").get_by_label("GM").select_option(label=SEAT)
        owner.get_by_role("button", name="Seat this GM").click()
        expect(owner.locator("#gm-seat")).to_contain_text(f"GM at this table: {SEAT}")
        screenshot(owner, "openai-seated-owner.png")
        player.reload()
        expect(player.locator("#gm-seat")).to_contain_text(f"GM at this table: {SEAT}")

        player.get_by_label("Your message to the table").fill("I attack the goblin")
        player.get_by_role("button", name="Send").click()
        for page in (owner, player):  # the narration streams before the call is answered
            expect(
                page.locator(".msg.role-gm", has_text="Thorin lunges at the goblin.")
            ).to_be_visible()
            expect(page.locator(".approval-card")).to_be_visible()
            expect(page.locator(goblin_hp)).to_have_text("7 / 7")
        expect(owner.locator(".approval-card")).to_contain_text("gpt-gm-test")
        screenshot(owner, "openai-approval-owner.png")
        owner.locator(".approval-card").get_by_role("button", name="Approve").click()
        for page in (owner, player):
            expect(page.locator(goblin_hp)).to_have_text("2 / 7")
            expect(
                page.locator(".msg.role-gm", has_text="The goblin howls and staggers back.")
            ).to_be_visible()

        answered = outside_the_browser_loop(
            lambda: Turn.objects.filter(campaign=world.campaign).latest("pk").pk
        )
        undo = player.locator(f'[data-turn="{answered}"]').get_by_role(
            "button", name="Undo this turn"
        )
        expect(undo).to_be_visible()
        undo.click()
        dialog = player.locator("#undo-dialog")
        dialog.get_by_role("button", name="Undo turn").click()
        for page in (owner, player):
            expect(page.locator(goblin_hp)).to_have_text("7 / 7")
            expect(page.locator(f'[data-turn="{answered}"] .undo-note')).to_be_visible()
        screenshot(player, "openai-undone-player.png")

        def stored():
            turn = Turn.objects.filter(campaign=world.campaign).latest("pk")
            ran = ToolInvocation.objects.get(turn=turn, approval_of__isnull=False)
            return turn, ran, Creature.objects.get(pk=world.goblin.pk).hp

        turn, ran, hp = outside_the_browser_loop(stored)
        assert (turn.gm_model, ran.model, ran.status, hp) == (
            f"openai/{VERSION}",
            f"openai/{VERSION}",
            "reverted",
            7,
        )
        assert turn.reverted_at is not None and len(fake.requests) == 2

        def warden():
            staff = make_user("warden", is_staff=True)
            perm = Permission.objects.get(codename="revert_toolinvocation")
            staff.user_permissions.add(perm)
            return staff

        staff = outside_the_browser_loop(warden)
        admin = sign_in(browser, asgi_server, staff.username)
        admin.goto("/admin/audit/toolinvocation/analytics/")
        table = admin.locator("table.audit-models")
        expect(table).to_contain_text(f"openai/{VERSION}")
        expect(table).to_contain_text("scripted/1")
        expect(table.locator("tbody tr")).to_have_count(2)
        expect(admin.locator('svg[aria-label="Revert rate of GM turns, by model"]')).to_be_visible()
        table.scroll_into_view_if_needed()
        screenshot(admin, "openai-models-compared.png")
