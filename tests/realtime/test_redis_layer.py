"""The real Redis channel layer: a feed that stays silent for longer than every timeout in the
path (redis-py's socket timeouts, channels-redis's blocking read) is still open and still
delivers. These run where Redis does (CI sets REDIS_URL)."""

import pytest

from tests.realtime.conftest import (
    browser,
    longest_layer_timeout,
    play_and_undo,
    receive_until,
    redis_only,
)

pytestmark = [redis_only, pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


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
