"""A table left idle stays live through the real stack (Chromium, Daphne, channels-redis,
Redis): its socket outlasts every timeout of the channel layer, then delivers the next change.
Daphne's own keepalive pings (every 20 s) are answered by the browser and are no silence."""

import pytest
from playwright.sync_api import WebSocket, expect

from campaigns.models import Creature
from tests.browser.support import chromium, open_table, outside_the_browser_loop, signed_in_page
from tests.conftest import World
from tests.realtime.conftest import damage_goblin, longest_layer_timeout

pytestmark = pytest.mark.browser


def hit_the_goblin(world: World) -> None:
    damage_goblin(world, world.turn(message="I strike at last."), amount=5)


def test_an_idle_table_stays_connected_and_then_shows_the_next_change(
    live_world: World, asgi_server: str
):
    world = live_world
    silence_ms = (longest_layer_timeout() + 1) * 1000
    closed: list[str] = []

    def watch(socket: WebSocket) -> None:
        socket.on("close", lambda closed_socket: closed.append(closed_socket.url))

    with chromium() as browser:
        page = signed_in_page(browser, asgi_server, world.player.username)
        page.on("websocket", watch)
        open_table(page, world.campaign.pk)

        page.wait_for_timeout(silence_ms)  # the silence under test, not a wait for something
        outside_the_browser_loop(lambda: hit_the_goblin(world))

        goblin = f'[data-creature="{world.goblin.pk}"] .hp-text'
        expect(page.locator(goblin)).to_have_text("2 / 7")
        assert closed == [], "the socket was closed during the silence"
    assert Creature.objects.get(pk=world.goblin.pk).hp == 2
