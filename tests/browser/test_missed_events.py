"""A page that misses an event notices the gap in `seq` and redraws from the server."""

import json

import pytest
from django.db.models import F
from playwright.sync_api import WebSocketRoute, expect

from campaigns.models import Campaign, Creature
from tests.browser.support import chromium, open_table, outside_the_browser_loop, signed_in_page
from tests.conftest import World
from tests.servers import WorkerProcess, api_token, http

pytestmark = pytest.mark.browser


def lose_an_event(world: World) -> None:
    """A change whose event never reached anyone: the channel layer delivers at most once."""
    Creature.objects.filter(pk=world.goblin.pk).update(hp=3, conditions=["bleeding"])
    Campaign.objects.filter(pk=world.campaign.pk).update(event_seq=F("event_seq") + 1)


def test_a_gap_in_seq_refetches_the_state_and_the_feed(
    live_world: World, asgi_server: str, gm_worker: WorkerProcess
):
    world = live_world
    goblin = f'[data-creature="{world.goblin.pk}"]'
    with chromium() as browser:
        player = signed_in_page(browser, asgi_server, world.player.username)
        other = signed_in_page(browser, asgi_server, world.other.username)
        for page in (player, other):
            open_table(page, world.campaign.pk)
            expect(page.locator(f"{goblin} .hp-text")).to_have_text("7 / 7")

        outside_the_browser_loop(lambda: lose_an_event(world))
        other.get_by_label("Your message to the table").fill("Did anyone hear that?")
        other.get_by_role("button", name="Send").click()

        for page in (player, other):
            expect(page.locator(f"{goblin} .hp-text")).to_have_text("3 / 7")
            expect(page.locator(f"{goblin} .conditions")).to_have_text("bleeding")
            expect(page.locator("#feed")).to_contain_text("Did anyone hear that?")


def test_events_missed_before_the_first_connection_are_caught_up_by_hello(
    live_world: World, asgi_server: str
):
    """The page's first connection attempt fails (a server restarting, say) and a change's
    event is lost meanwhile; the connection that succeeds opens with `hello`, whose seq is
    ahead of the page's, so the page refetches at once instead of waiting for a next event."""
    world = live_world
    goblin = f'[data-creature="{world.goblin.pk}"]'
    attempts: list[WebSocketRoute] = []

    def first_attempt_fails(socket: WebSocketRoute) -> None:
        attempts.append(socket)
        if len(attempts) == 1:
            outside_the_browser_loop(lambda: lose_an_event(world))
            socket.close(code=1011)
        else:
            socket.connect_to_server()

    with chromium() as browser:
        page = signed_in_page(browser, asgi_server, world.player.username)
        page.route_web_socket("**/ws/campaigns/**", first_attempt_fails)
        open_table(page, world.campaign.pk)
        expect(page.locator(f"{goblin} .hp-text")).to_have_text("3 / 7")
        expect(page.locator(f"{goblin} .conditions")).to_have_text("bleeding")
    assert len(attempts) == 2


def test_events_out_of_commit_order_are_put_back_in_order_without_a_refetch(
    live_world: World, asgi_server: str
):
    """Two processes (a worker and a web server) may publish in another order than they
    committed: the page waits a moment for the missing event instead of refetching at once."""
    world = live_world
    goblin = f'[data-creature="{world.goblin.pk}"] .hp-text'
    swapped: list[str] = []

    def deliver_the_first_state_change_late(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()
        late: list[str] = []

        def from_server(message: str | bytes) -> None:
            event = json.loads(message)
            if event["type"] == "state_changed" and not late and not swapped:
                late.append(message)
                return
            socket.send(message)
            if late:
                swapped.append(late[0])
                socket.send(late.pop())

        server.on_message(from_server)

    with chromium() as browser:
        page = signed_in_page(browser, asgi_server, world.owner.username)
        page.route_web_socket("**/ws/campaigns/**", deliver_the_first_state_change_late)
        open_table(page, world.campaign.pk)
        refetched: list[str] = []
        page.on("request", lambda r: refetched.append(r.url) if "/state/" in r.url else None)

        token = api_token(asgi_server, world.owner.username)
        base = f"{asgi_server}/api/campaigns/{world.campaign.pk}"
        status, _, turn = http("POST", f"{base}/turns/", {"message": "-", "run_gm": False}, token)
        assert status == 201, turn
        for hp in (5, 4):
            call = {
                "tool": "modify_creature",
                "input": {"creature_id": world.goblin.pk, "set_hp": hp},
            }
            status, _, body = http("POST", f"{base}/turns/{turn['id']}/tool-calls/", call, token)
            assert status == 201, body
        expect(page.locator(goblin)).to_have_text("4 / 7")
    assert swapped, "no event was delivered late"
    assert refetched == []
