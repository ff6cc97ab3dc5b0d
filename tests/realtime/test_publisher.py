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
from campaigns.events import GMTextDelta
from campaigns.models import Source
from campaigns.realtime import EVENTS_MESSAGE, broadcast_on_commit, event, group_name
from tests.realtime.conftest import TIMEOUT, browser


def three_events() -> list[dict]:
    return [event(GMTextDelta(text=f"{n}"), source=Source.SYSTEM, turn=None) for n in range(3)]


@pytest.fixture
def layer_messages(monkeypatch) -> list[tuple[str, dict]]:
    """Every message the publisher hands the channel layer."""
    sent: list[tuple[str, dict]] = []
    # The world's own set-up events (fixtures made before this one) leave first, unrecorded:
    # the publisher sends what plain sync code handed it without making that code wait.
    realtime.flush()

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
    realtime.flush()

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
    realtime.flush()

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


def test_plain_sync_code_does_not_wait_for_the_send(world, monkeypatch):
    """A worker's or a command's publish is handed to the publisher loop and the caller goes on
    (or every publish would wait for the loop's thread); `flush` waits until it has left."""
    sent: list[dict] = []
    release = threading.Event()

    async def held_send(group: str, message: dict) -> None:
        await asyncio.get_running_loop().run_in_executor(None, release.wait, TIMEOUT)
        sent.append(message)

    monkeypatch.setattr(get_channel_layer(), "group_send", held_send)
    realtime._send(group_name(world.campaign.pk), [{"type": "scene_changed", "seq": 1}])
    assert sent == []  # returned while the send is still held
    release.set()
    realtime.flush()
    assert [json.loads(t)["seq"] for m in sent for t in m["texts"]] == [1]


def test_the_publisher_sends_in_the_order_it_was_handed_the_messages(world, monkeypatch):
    """One task sends the queue one message at a time: a slow send (a Redis round trip) is not
    overtaken by the next transaction's, so a process's events leave in seq order."""
    sent: list[int] = []

    async def uneven_send(group: str, message: dict) -> None:
        seq = json.loads(message["texts"][0])["seq"]
        for _ in range(10 if seq % 2 else 0):  # odd numbers take ten turns of the loop
            await asyncio.sleep(0)
        sent.append(seq)

    monkeypatch.setattr(get_channel_layer(), "group_send", uneven_send)
    for seq in range(1, 21):
        realtime._send(group_name(world.campaign.pk), [{"type": "scene_changed", "seq": seq}])
    realtime.flush()
    assert sent == list(range(1, 21))
