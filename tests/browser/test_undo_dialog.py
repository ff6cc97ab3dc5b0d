"""The undo dialog when undo is not simple: a right revoked meanwhile, later work in the way."""

import pytest
from playwright.sync_api import expect

from audit.models import SecurityEvent, ToolInvocation
from campaigns.models import Creature, Turn
from campaigns.services import membership_add, turn_create
from gm.services import gm_turn_run, turn_submit
from tests.browser.support import (
    chromium,
    open_table,
    outside_the_browser_loop,
    screenshot,
    signed_in_page,
)
from tests.conftest import World, call

pytestmark = pytest.mark.browser


def attack(world: World) -> Turn:
    """The player's finished turn: the scripted GM hits the goblin."""
    queued = turn_submit(campaign=world.campaign, actor=world.player, message="I attack the goblin")
    return gm_turn_run(turn=queued)


def later_hit_mid_turn(world: World) -> Turn:
    """The other player's later turn, still running (the GM mid-turn), that hit the goblin too:
    later work in the way of undoing the first."""
    later = turn_create(campaign=world.campaign, actor=world.other, message="Me too!")
    hit = {"creature_id": world.goblin.pk, "hp_delta": -1}
    call(world, "modify_creature", hit, actor=world.other, turn=later)
    Turn.objects.filter(pk=later.pk).update(status=Turn.Status.RUNNING)
    return later


def test_a_co_gm_whose_right_was_revoked_is_told_plainly(live_world: World, asgi_server: str):
    world = live_world
    turn = attack(world)
    hp = Creature.objects.get(pk=world.goblin.pk).hp
    with chromium() as browser:
        cogm = signed_in_page(browser, asgi_server, world.cogm.username)
        open_table(cogm, world.campaign.pk)
        undo = cogm.get_by_role("button", name="Undo this turn")
        expect(undo).to_be_visible()
        outside_the_browser_loop(  # the owner takes the right back while the page is open
            lambda: membership_add(
                campaign=world.campaign, by=world.owner, username=world.cogm.username
            )
        )
        undo.click()
        dialog = cogm.locator("#undo-dialog")
        # A refusal is the message alone: no plan, no reason box, no dead button.
        expect(dialog.get_by_role("alert")).to_have_text(
            "Only the original actor, the campaign owner or a co-GM may do this."
        )
        expect(dialog.get_by_role("button", name="Undo turn")).to_be_hidden()
        expect(dialog.get_by_label("Why are you undoing it?")).to_be_hidden()
        expect(dialog.locator(".undo-plan")).to_be_hidden()
        dialog.get_by_role("button", name="Close").click()
        expect(dialog).to_be_hidden()
    assert Creature.objects.get(pk=world.goblin.pk).hp == hp
    assert SecurityEvent.objects.filter(user=world.cogm, target=f"turn:{turn.pk}").exists()


def test_later_work_in_the_way_is_listed_and_undone_with_cascade(
    live_world: World, asgi_server: str
):
    world = live_world
    first = attack(world)
    running = later_hit_mid_turn(world)
    goblin_hp = f'[data-creature="{world.goblin.pk}"] .hp-text'
    with chromium() as browser:
        owner = signed_in_page(browser, asgi_server, world.owner.username)
        open_table(owner, world.campaign.pk)
        owner.get_by_role("button", name="Undo this turn").click()
        dialog = owner.locator("#undo-dialog")
        conflicts = dialog.locator(".undo-conflicts")
        expect(conflicts).to_contain_text("Goblin takes 1 damage")
        confirm = dialog.get_by_role("button", name="Undo turn")
        expect(confirm).to_be_disabled()

        conflicts.get_by_label("Also undo those later changes").check()
        expect(dialog.locator(".undo-calls")).to_contain_text("Goblin takes 1 damage")
        expect(dialog.locator(".undo-calls")).to_contain_text("(later turn)")
        expect(dialog.locator(".undo-changes")).to_contain_text("→ 7")
        expect(confirm).to_be_enabled()
        screenshot(owner, "undo-dialog-cascade.png")
        confirm.click()
        expect(dialog).to_be_hidden()
        expect(owner.locator(goblin_hp)).to_have_text("7 / 7")
        expect(owner.locator(f'[data-turn="{first.pk}"] .undo-note')).to_be_visible()
    statuses = ToolInvocation.objects.filter(turn__in=[first, running]).values_list(
        "status", flat=True
    )
    assert set(statuses) == {ToolInvocation.Status.REVERTED}


def test_a_player_sees_the_later_calls_in_the_way_named_without_a_security_event(
    live_world: World, asgi_server: str
):
    """Naming the calls in the way must not ask for a cascade plan the player may not see (that
    is a 403 and a security event for merely opening the dialog)."""
    world = live_world
    attack(world)
    later_hit_mid_turn(world)
    with chromium() as browser:
        player = signed_in_page(browser, asgi_server, world.player.username)
        open_table(player, world.campaign.pk)
        player.get_by_role("button", name="Undo this turn").click()
        conflicts = player.locator("#undo-dialog .undo-conflicts")
        expect(conflicts).to_contain_text("Goblin takes 1 damage")
    assert not SecurityEvent.objects.filter(user=world.player).exists()
