"""The publisher's wire: a transaction's events leave as one channel-layer message, serialised
once, and reach a socket without waiting for the process's sync thread."""

import asyncio
import json
import logging
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction

from campaigns import realtime
from campaigns.realtime import EVENTS_MESSAGE, EventSource, broadcast_on_commit, event, group_name
from tests.realtime.conftest import TIMEOUT, browser


def three_events() -> list[dict]:
    return [
        event("scene_changed", {"n": n}, source=EventSource.SYSTEM, turn=None) for n in range(3)
    ]


@pytest.fixture
def layer_messages(monkeypatch) -> list[tuple[str, dict]]:
    """Every message the publisher hands the channel layer."""
    sent: list[tuple[str, dict]] = []

    async def group_send(group: str, message: dict) -> None:
        sent.append((group, message))

    monkeypatch.setattr(get_channel_layer(), "group_send", group_send)
    return sent


@pytest.mark.django_db(transaction=True)
def test_a_transactions_events_leave_as_one_message_of_json_texts_in_seq_order(
    world, layer_messages
):
    with transaction.atomic():
        envelopes = broadcast_on_commit(world.campaign.pk, three_events())
        assert layer_messages == []  # nothing leaves before the commit

    [(group, message)] = layer_messages
    assert group == group_name(world.campaign.pk)
    assert message["type"] == EVENTS_MESSAGE
    assert [json.loads(text) for text in message["texts"]] == envelopes
    seqs = [e["seq"] for e in envelopes]
    assert seqs == list(range(seqs[0], seqs[0] + 3))


@pytest.mark.django_db(transaction=True)
def test_a_failed_broadcast_is_logged_and_the_change_stays_committed(world, monkeypatch, caplog):
    async def unreachable(group: str, message: dict) -> None:
        raise ConnectionError("layer down")

    monkeypatch.setattr(get_channel_layer(), "group_send", unreachable)
    before = world.campaign.event_seq
    with caplog.at_level(logging.ERROR, logger=realtime.__name__), transaction.atomic():
        envelopes = broadcast_on_commit(world.campaign.pk, three_events())

    world.campaign.refresh_from_db()
    assert world.campaign.event_seq == before + 3
    [record] = caplog.records
    assert f"{envelopes[0]['seq']}..{envelopes[-1]['seq']}" in record.getMessage()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_events_reach_a_socket_while_the_sync_thread_is_busy(world):
    """A slow view or database call holds the one thread that sync code of the process shares;
    forwarding an event must not queue behind it."""
    socket = await browser(world.campaign.pk, world.player)
    text = json.dumps({"type": "scene_changed", "seq": 10**6})
    release = threading.Event()
    busy = asyncio.ensure_future(sync_to_async(release.wait)())  # the thread-sensitive thread
    try:
        await get_channel_layer().group_send(
            group_name(world.campaign.pk), {"type": EVENTS_MESSAGE, "texts": [text]}
        )
        assert await socket.receive_from(timeout=TIMEOUT) == text
        assert not busy.done()
    finally:
        release.set()
        await busy
    await socket.disconnect()
