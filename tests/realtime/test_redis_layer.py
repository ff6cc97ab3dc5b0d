"""The real Redis channel layer: a feed that stays silent for longer than every timeout in the
path (redis-py's socket timeouts, channels-redis's blocking read) is still open and still
delivers."""

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit

import pytest
import pytest_asyncio
from channels.layers import get_channel_layer
from channels_redis.utils import create_pool
from django.conf import settings as django_settings
from redis.asyncio import Redis

from tests.realtime.conftest import (
    browser,
    longest_layer_timeout,
    play_and_undo,
    receive_until,
)
from web.consumers import UNAVAILABLE

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

# How long after its connection is lost a feed closes its sockets: redis-py's reconnection
# attempts (refused at once here) and the reader's poll.
LOST_WITHIN = 10


async def test_an_idle_feed_outlives_every_layer_timeout_and_still_delivers(world):
    silence = longest_layer_timeout() + 1
    socket = await browser(world.campaign.pk, world.player)
    assert await socket.receive_nothing(timeout=silence, interval=0.1)

    await play_and_undo(world)
    events = await receive_until(socket, "interaction_reverted")
    assert [e["type"] for e in events] == [
        "message_created",
        "state_changed",
        "interaction_reverted",
    ]
    await socket.disconnect()


class RedisBehind:
    """Redis behind a TCP relay the test can cut, as Redis going away cuts it: every
    connection through it closed, and new ones refused."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"redis://127.0.0.1:{port}/{urlsplit(django_settings.REDIS_URL).path.strip('/')}"

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        target = urlsplit(django_settings.REDIS_URL)
        up_reader, up_writer = await asyncio.open_connection(target.hostname, target.port)
        self.writers += [writer, up_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.transport.abort()
        await self.server.wait_closed()


@pytest_asyncio.fixture
async def redis_behind(settings):
    relay = RedisBehind()
    url = await relay.start()
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "config.redis_layer.RedisPubSubLayer",
            "CONFIG": {"hosts": [{"address": url, "socket_connect_timeout": 1}]},
        }
    }
    yield relay
    await relay.cut()


async def test_a_lost_redis_closes_every_socket_of_the_feed_with_unavailable(
    world, redis_behind, caplog
):
    """Pub/sub keeps nothing: a feed whose subscription is gone would stay deaf. Its sockets are
    closed instead (their pages reconnect, and catch up by `seq`), as when the layer fails."""
    sockets = [await browser(world.campaign.pk, user) for user in (world.player, world.owner)]
    with caplog.at_level(logging.ERROR):
        await redis_behind.cut()
        for socket in sockets:
            assert await socket.receive_output(timeout=LOST_WITHIN) == {
                "type": "websocket.close",
                "code": UNAVAILABLE,
            }
    assert any("channel layer unavailable" in r.getMessage() for r in caplog.records)


async def test_a_subscription_redis_drops_closes_the_sockets_and_the_next_one_delivers(world):
    """Redis ends the subscribed connection (CLIENT KILL, a failover): its sockets are closed,
    never left open and deaf; the page's new socket subscribes anew and hears the next events."""
    socket = await browser(world.campaign.pk, world.player)
    [host] = get_channel_layer()._kwargs["hosts"]
    redis = Redis(connection_pool=create_pool(host))
    try:
        assert await redis.client_kill_filter(_type="pubsub") >= 1
    finally:
        await redis.aclose(close_connection_pool=True)
    assert await socket.receive_output(timeout=LOST_WITHIN) == {
        "type": "websocket.close",
        "code": UNAVAILABLE,
    }
    again = await browser(world.campaign.pk, world.player)
    await play_and_undo(world)
    assert (await receive_until(again, "interaction_reverted"))[-1]["source"] == "system"
    await again.disconnect()


async def test_a_feed_that_ends_leaves_no_subscription_behind(world):
    """The last socket of a campaign leaves: its feed's group and its own channel are both
    unsubscribed (channels-redis kept every channel ever made subscribed until its receive was
    cancelled, and a feed ends its receive with a message, not a cancel)."""
    sockets = [await browser(world.campaign.pk, user) for user in (world.player, world.owner)]
    layer = get_channel_layer()._get_layer()
    assert len(layer.channels) == 1 and len(layer.groups) == 1
    for socket in sockets:
        await socket.disconnect()
    assert layer.channels == {} and layer.groups == {}
    assert all(not shard._subscribed_to for shard in layer._shards)
