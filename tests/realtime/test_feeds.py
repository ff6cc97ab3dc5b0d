"""A campaign's feed in a server process: one channel-layer subscription for all of the
campaign's sockets there, events held back until a socket's hello, a layer failure ending every
socket cleanly."""

import asyncio
import json
import logging

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from redis.asyncio import Redis

from campaigns import selectors
from campaigns.realtime import EVENTS_MESSAGE, group_name
from tests.realtime.conftest import (
    TIMEOUT,
    browser,
    layer_pool,
    play_and_undo,
    receive_until,
)
from web.consumers import UNAVAILABLE

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def group_size(group: str) -> int:
    """How many subscribers the layer holds in `group`: Redis's own count of the connections
    subscribed to it (pub/sub: one per process)."""
    layer = get_channel_layer()
    redis = Redis(connection_pool=layer_pool())
    try:
        [(_, count)] = await redis.pubsub_numsub(layer._get_group_channel_name(group))
    finally:
        await redis.aclose(close_connection_pool=True)
    return count


async def test_the_sockets_of_one_campaign_share_one_subscription_until_the_last_leaves(world):
    group = group_name(world.campaign.pk)
    sockets = [await browser(world.campaign.pk, user) for user in (world.player, world.owner)]
    sockets.append(await browser(world.campaign.pk, world.player))
    assert await group_size(group) == 1

    await sockets.pop(0).disconnect()
    await play_and_undo(world)
    for socket in sockets:  # the others still receive everything, in order
        events = await receive_until(socket, "interaction_reverted")
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(seqs[0], seqs[0] + 3))
    assert await group_size(group) == 1

    for socket in sockets:
        await socket.disconnect()
    assert await group_size(group) == 0


async def test_an_event_published_during_the_handshake_arrives_after_the_hello(world, monkeypatch):
    text = json.dumps({"type": "scene_changed", "seq": 10**6})
    read_seq = selectors.campaign_event_seq

    def seq_read_while_an_event_goes_out(**kwargs):
        async_to_sync(get_channel_layer().group_send)(
            group_name(world.campaign.pk), {"type": EVENTS_MESSAGE, "texts": [text]}
        )
        return read_seq(**kwargs)

    monkeypatch.setattr("web.consumers.campaign_event_seq", seq_read_while_an_event_goes_out)
    socket = await browser(world.campaign.pk, world.player)  # asserts the hello comes first
    assert await socket.receive_from(timeout=TIMEOUT) == text
    await socket.disconnect()


async def test_a_layer_failure_after_the_handshake_closes_every_socket_with_unavailable(
    world, monkeypatch, caplog
):
    layer = get_channel_layer()
    receive, fail = layer.receive, asyncio.Event()

    async def receive_until_redis_dies(channel: str) -> dict:
        await fail.wait()
        raise ConnectionError("channel layer gone")

    monkeypatch.setattr(layer, "receive", receive_until_redis_dies)
    sockets = [await browser(world.campaign.pk, user) for user in (world.player, world.owner)]
    with caplog.at_level(logging.ERROR, logger="web.feeds"):
        fail.set()
        for socket in sockets:
            assert await socket.receive_output(TIMEOUT) == {
                "type": "websocket.close",
                "code": UNAVAILABLE,
            }
    [record] = caplog.records
    assert "channel layer unavailable" in record.getMessage() and record.exc_info

    monkeypatch.setattr(layer, "receive", receive)  # the layer is back: a new socket listens
    again = await browser(world.campaign.pk, world.player)
    await play_and_undo(world)
    assert (await receive_until(again, "interaction_reverted"))[-1]["source"] == "system"
    await again.disconnect()
