"""Human in the loop with Claude at a live table: a turn answered by the anthropic provider
(against the strict local fake of the Messages API, tests/gm/fake_claude.py) pauses on a
critical call; the owner answers the card on the page in a real browser while the player
watches. Approved, the call runs and the model reads its result; rejected, the model is told
(an is_error tool_result carrying the reason) and nothing changes. Either way the narration
the model writes afterwards reaches both pages."""

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from audit.models import ToolInvocation
from campaigns.models import Campaign, Creature, Turn
from tests.browser.support import (
    at_the_table,
    chromium,
    outside_the_browser_loop,
    screenshot,
)
from tests.conftest import World, dump
from tests.gm.fake_claude import FakeClaude
from tests.processes import worker_start
from tests.servers import WorkerProcess

pytestmark = pytest.mark.browser

API_KEY = "test-key"


@pytest.fixture
def fake_claude() -> Iterator[FakeClaude]:
    """The fake Messages API on localhost, reachable from the worker process; whatever the
    test expects, the client must never have sent a request the API refuses."""
    fake = FakeClaude()
    fake.start()
    yield fake
    fake.stop()
    assert fake.refusals == [], "the client sent requests the Messages API refuses"


@pytest.fixture
def claude_worker(transactional_db, tmp_path, fake_claude: FakeClaude) -> Iterator[WorkerProcess]:
    """One task worker process whose GM is the anthropic provider, pointed at the fake through
    the settings it reads from its environment (config/settings.py)."""
    worker = worker_start(
        "test-claude-worker",
        tmp_path / "test-claude-worker.log",
        GM_PROVIDER="anthropic",
        ANTHROPIC_API_KEY=API_KEY,
        ANTHROPIC_BASE_URL=fake_claude.url,
        ANTHROPIC_MODEL="claude-gm-test",
        ANTHROPIC_MAX_RETRIES="0",
    )
    yield worker
    worker.stop()


@pytest.fixture
def critical_world(live_world: World) -> World:
    Campaign.objects.filter(pk=live_world.campaign.pk).update(approval_policy="critical")
    return live_world


def script_attack(fake: FakeClaude, world: World, narration: str) -> None:
    """The model narrates, hits the goblin for 5 (critical: held), then, once it reads the
    tool_result, ends the turn with `narration`."""
    hit = {"creature_id": world.goblin.pk, "hp_delta": -5}
    fake.reply(("text", ["Thorin lunges. "]), ("tool_use", ("modify_creature", hit)))
    fake.reply(("text", [narration]))


def send_and_see_the_card(world: World, owner: Page, player: Page, goblin_hp: str) -> None:
    player.get_by_label("Your message to the table").fill("I attack the goblin")
    player.get_by_role("button", name="Send").click()
    for page in (owner, player):
        card = page.locator(".approval-card")
        expect(card).to_be_visible()
        expect(card.locator("h3")).to_contain_text("Goblin takes")
        expect(page.locator(goblin_hp)).to_have_text("7 / 7")
    expect(player.locator(".approval-card").get_by_role("button", name="Approve")).to_have_count(0)


def tool_result(fake: FakeClaude) -> dict:
    """The tool_result block of the request that answered the held call."""
    assert len(fake.requests) == 2
    [result] = fake.requests[1]["messages"][-1]["content"]
    assert result["type"] == "tool_result"
    return result


def test_the_owner_approves_a_claude_call_on_the_page_and_the_narration_follows(
    critical_world: World, asgi_server: str, fake_claude: FakeClaude, claude_worker
):
    world = critical_world
    script_attack(fake_claude, world, "The goblin howls and staggers back.")
    goblin_hp = f'[data-creature="{world.goblin.pk}"] .hp-text'
    with chromium() as browser:
        owner, player = at_the_table(
            browser, asgi_server, world.campaign.pk, world.owner.username, world.player.username
        )

        send_and_see_the_card(world, owner, player, goblin_hp)
        expect(owner.locator(".approval-card")).to_contain_text("claude-gm-test")
        screenshot(player, "approval-claude-player.png")
        screenshot(owner, "approval-claude-owner.png")

        owner.locator(".approval-card").get_by_role("button", name="Approve").click()

        for page in (owner, player):
            expect(page.locator(".approval-card")).to_have_count(0)
            expect(page.locator(goblin_hp)).to_have_text("2 / 7")
            expect(
                page.locator(".msg.role-gm", has_text="The goblin howls and staggers back.")
            ).to_be_visible()
        screenshot(player, "approval-claude-approved-player.png")

    def stored():
        ran = ToolInvocation.objects.get(campaign=world.campaign, approval_of__isnull=False)
        turn = Turn.objects.get(campaign=world.campaign)
        return ran, turn.status, Creature.objects.get(pk=world.goblin.pk).hp

    ran, status, hp = outside_the_browser_loop(stored)
    assert (ran.status, status, hp) == ("committed", Turn.Status.COMPLETED, 2)
    result = tool_result(fake_claude)
    assert result["is_error"] is False and json.loads(result["content"])["hp"] == 2
    assert fake_claude.refusals == []


def test_the_owner_rejects_a_claude_call_on_the_page_and_the_model_is_told(
    critical_world: World, asgi_server: str, fake_claude: FakeClaude, claude_worker
):
    world = critical_world
    script_attack(fake_claude, world, "The goblin sneers, untouched.")
    before = dump(world.campaign)
    goblin_hp = f'[data-creature="{world.goblin.pk}"] .hp-text'
    with chromium() as browser:
        owner, player = at_the_table(
            browser, asgi_server, world.campaign.pk, world.owner.username, world.player.username
        )

        send_and_see_the_card(world, owner, player, goblin_hp)

        card = owner.locator(".approval-card")
        card.get_by_label("Reason (shown to the table)").fill("not yet, he is asleep")
        card.get_by_role("button", name="Reject").click()

        for page in (owner, player):
            expect(page.locator(".approval-card")).to_have_count(0)
            expect(
                page.locator(".msg.role-gm", has_text="The goblin sneers, untouched.")
            ).to_be_visible()
            expect(page.locator(goblin_hp)).to_have_text("7 / 7")
        screenshot(player, "approval-claude-rejected-player.png")

    def stored():
        turn = Turn.objects.get(campaign=world.campaign)
        return turn.status, Creature.objects.get(pk=world.goblin.pk).hp, dump(world.campaign)

    status, hp, after = outside_the_browser_loop(stored)
    assert (status, hp) == (Turn.Status.COMPLETED, 7) and after == before
    result = tool_result(fake_claude)
    assert result["is_error"] is True
    error = json.loads(result["content"])["error"]
    assert error == f"{world.owner.username} rejected this call: not yet, he is asleep"
    assert fake_claude.refusals == []
