"""Catching up (docs/api.md#the-live-feed-websocket): every socket starts with `hello` {seq},
`/state/` carries the seq it reflects, so a client that was away knows what it missed and resyncs
without drifting."""

import threading
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connection
from rest_framework.test import APIClient

from campaigns import selectors
from campaigns.models import Campaign
from tests.realtime.conftest import (
    TIMEOUT,
    damage_goblin,
    open_socket,
    play_and_undo,
    receive_until,
    token_header,
)


def fetch_state(world: Any) -> dict[str, Any]:
    client = APIClient()
    client.force_authenticate(world.owner)
    response = client.get(f"/api/campaigns/{world.campaign.pk}/state/")
    assert response.status_code == 200
    return response.json()


def hp_of(state: dict[str, Any], creature: Any) -> int:
    [row] = [c for c in state["creatures"] if c["id"] == creature.pk]
    return row["hp"]


@database_sync_to_async
def hit_goblin(world: Any, amount: int) -> None:
    damage_goblin(world, world.turn(message="I strike."), amount=amount)


async def connect_bot(world: Any):
    """A non-browser client (token, no Origin), with the `hello` it was greeted with."""
    socket, connected, _ = await open_socket(world.campaign.pk, [await token_header(world.owner)])
    assert connected
    greeting = await socket.receive_json_from(timeout=TIMEOUT)
    assert greeting["type"] == "hello"
    return socket, greeting


@pytest.mark.parametrize("events_before", [0, 3])
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_hello_carries_the_campaigns_current_seq(world, events_before):
    if events_before:
        await play_and_undo(world)
    socket, greeting = await connect_bot(world)
    current = await database_sync_to_async(
        lambda: Campaign.objects.get(pk=world.campaign.pk).event_seq
    )()
    assert current == world.campaign.event_seq + events_before
    assert greeting == {
        **greeting,
        "type": "hello",
        "source": "system",
        "campaign": str(world.campaign.pk),
        "seq": current,
        "turn": None,
        "invocation": None,
        "data": {},
    }
    await socket.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_client_back_from_a_gap_catches_up_with_hello_and_state(world):
    first, greeting = await connect_bot(world)
    seen = greeting["seq"]
    await play_and_undo(world)
    for envelope in await receive_until(first, "interaction_reverted"):
        assert envelope["seq"] == seen + 1
        seen = envelope["seq"]
    await first.disconnect()

    await hit_goblin(world, amount=5)  # published while the client is away

    second, greeting = await connect_bot(world)
    assert greeting["seq"] > seen, "hello shows the gap"
    state = await database_sync_to_async(fetch_state)(world)
    assert state["seq"] == greeting["seq"]
    assert hp_of(state, world.goblin) == 2, "the state has what the missed events did"

    await hit_goblin(world, amount=1)
    stream = await receive_until(second, "state_changed")
    assert stream[0]["seq"] == state["seq"] + 1, "the stream resumes right after the state"
    assert stream[-1]["data"]["fields"]["hp"] == 1
    await second.disconnect()


@pytest.mark.django_db(transaction=True)
def test_state_and_its_seq_are_read_in_one_snapshot(world, monkeypatch):
    """A tool call commits while `/state/` is being read: the answer is from one moment, the
    change either in both the dump and `seq` or in neither."""
    seq_before = world.campaign.event_seq
    writer_errors: list[BaseException] = []

    def commit_a_hit() -> None:
        try:
            damage_goblin(world, world.turn(message="I strike."), amount=5)
        except BaseException as error:  # reported below, after the read
            writer_errors.append(error)
        finally:
            connection.close()

    writer = threading.Thread(target=commit_a_hit)
    real_dump = selectors.world_dump
    committed_during_the_read: list[bool] = []

    def dump_after_a_concurrent_commit(campaign):
        writer.start()
        writer.join(timeout=2)
        committed_during_the_read.append(not writer.is_alive())
        return real_dump(campaign)

    monkeypatch.setattr(selectors, "world_dump", dump_after_a_concurrent_commit)
    state = fetch_state(world)
    writer.join(timeout=30)

    assert (state["seq"], hp_of(state, world.goblin)) == (seq_before, 7)
    # Readers do not hold writers back: the hit committed during the read, unseen by it.
    assert not writer_errors
    assert committed_during_the_read == [True]
    assert Campaign.objects.get(pk=world.campaign.pk).event_seq > seq_before
