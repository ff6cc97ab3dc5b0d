"""The one publisher: the only code that talks to the channel layer.

Events get their per-campaign `seq` inside the transaction that makes the change (under the
campaign row lock, so numbers follow commit order and a rolled-back change leaves no gap) and
leave only after commit. A broadcast failure is logged; it never undoes a committed write.
"""

import asyncio
import atexit
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.db import connection, transaction
from django.utils import timezone
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from campaigns.events import CATALOGUE, Event, GMTextDelta, Hello
from campaigns.models import Campaign, Source
from campaigns.visibility import player_envelopes

logger = logging.getLogger(__name__)


# What a channel layer that cannot be reached raises: the network's errors (the built-in
# TimeoutError among them) and redis-py's own, which do not derive from them.
LAYER_UNAVAILABLE: tuple[type[Exception], ...] = (OSError, RedisConnectionError, RedisTimeoutError)


# Tests turn this on (tests/conftest.py): every envelope is round-tripped through JSON where it
# is made and its data read back as its catalogue class reads it, so a payload the wire cannot
# carry (a datetime, a Decimal) or a value of the wrong type fails at its call site, not after
# commit in the channel layer or the consumer, where a failure is only logged.
ROUND_TRIP_JSON = False


# The channel-layer message that carries a transaction's events to a campaign's group:
# {"type": EVENTS_MESSAGE, "texts": [envelope as JSON, ...], "players": [...] | None}, in seq
# order: `players` are the same events as players may see them (`campaigns.visibility`), or
# None when players see `texts` as they are.
EVENTS_MESSAGE = "campaign.events"


def group_name(campaign_id: Any) -> str:
    return f"campaign.{campaign_id}"


def event(
    payload: Event,
    *,
    source: Source,
    turn: Any = None,
    invocation: Any = None,
) -> dict[str, Any]:
    """An event's envelope, before it is numbered: only an event of the catalogue
    (`campaigns.events`) is one; anything else is a TypeError."""
    if CATALOGUE.get(getattr(payload, "type", None)) is not type(payload):
        raise TypeError(f"{payload!r} is not an event of the catalogue (campaigns.events)")
    envelope = {
        "type": payload.type,
        "source": Source(source).value,
        "turn": turn,
        "invocation": str(invocation) if invocation else None,
        "data": payload.data(),
    }
    if not ROUND_TRIP_JSON:
        return envelope
    envelope = json.loads(json.dumps(envelope))
    type(payload).from_wire(envelope["data"])
    return envelope


def hello(campaign_id: Any, seq: int) -> dict[str, Any]:
    """The first envelope on every new socket, for that socket alone: `seq` is the campaign's
    last event when the socket joined its group, so a client that has seen less knows it missed
    events (and refetches `/state/`), and one that has seen as much knows it missed none."""
    envelope = event(Hello(), source=Source.SYSTEM)
    return {**envelope, "campaign": str(campaign_id), "seq": seq, "at": timezone.now().isoformat()}


def broadcast_on_commit(
    campaign_id: Any,
    events: list[dict[str, Any]],
    *,
    after: int | None = None,
    fog_in_play: bool | None = None,
) -> list[dict[str, Any]]:
    """Number `events` for the campaign and send them when the current transaction commits.

    `after`: the campaign's `event_seq` as the caller read it under the campaign row lock; the
    events are numbered after it and the caller stores `after + len(events)` as the new
    `event_seq` in its own write of the campaign row, before it commits (the audited dispatch
    does, in the statement that writes its log row). Without it this reserves the numbers
    itself (one UPDATE, which takes the row lock if the caller does not hold it yet).

    `fog_in_play`: whether any fog cell is revealed as the transaction commits, when the caller
    knows it without a read (the audited dispatch, from its campaign lock); False spares the
    read of what players may see, since without fog they see every event as it is.

    Only envelopes of catalogue events (`event`) are sent: another type is a TypeError."""
    if not events:
        return []
    strangers = [e.get("type") for e in events if e.get("type") not in CATALOGUE]
    if strangers:
        raise TypeError(f"not events of the catalogue (campaigns.events): {strangers}")
    drawn = any(e.get("type") != GMTextDelta.type for e in events)
    last = (
        after + len(events)
        if after is not None
        else _advance_event_seq(campaign_id, len(events), drawn=drawn)
    )
    at = timezone.now().isoformat()
    first = last - len(events) + 1
    envelopes = [
        {**e, "campaign": str(campaign_id), "seq": first + i, "at": at}
        for i, e in enumerate(events)
    ]
    # What players may see is read here, in the writer's transaction: the world as it commits.
    players = None if fog_in_play is False else player_envelopes(campaign_id, envelopes)
    transaction.on_commit(partial(_send, group_name(campaign_id), envelopes, players))
    return envelopes


def _advance_event_seq(campaign_id: Any, count: int, *, drawn: bool) -> int:
    """Reserve `count` event numbers; the row lock it takes is held until the caller commits.
    `drawn`: some of the events may change what the page draws (any but the GM's streamed
    words), so `drawn_seq` moves with them (both right-hand sides read the row as it was)."""
    table = connection.ops.quote_name(Campaign._meta.db_table)
    pk = Campaign._meta.pk.get_db_prep_value(campaign_id, connection)
    also = ", drawn_seq = event_seq + %s" if drawn else ""
    # Raw SQL: the ORM's update() returns a count, never the new value (UPDATE … RETURNING).
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET event_seq = event_seq + %s{also} WHERE id = %s "
            "RETURNING event_seq",
            [count, *([count] if drawn else []), pk],
        )
        return cursor.fetchone()[0]


def _send(
    group: str, envelopes: list[dict[str, Any]], players: list[dict[str, Any]] | None = None
) -> None:
    """One group message for the transaction's events, each envelope serialised here, once (a
    player's copy only where it differs): the layer carries the message to each server process
    once, and every socket's consumer forwards the texts for its viewer as they are
    (`web.feeds`), instead of one layer round trip per event and one JSON encoding per event
    per socket.

    Sync code run for an event loop (a view under Daphne) sends through that loop and waits.
    Plain sync code (a GM worker, a command, a script) hands the message to the process's
    publisher loop and goes on: the loop sends the messages of all its callers one at a time,
    in the order they were handed over (`flush` waits until it has sent them)."""
    layer = get_channel_layer()
    if layer is None:
        return
    texts = [json.dumps(e) for e in envelopes]
    message = {"type": EVENTS_MESSAGE, "texts": texts, "players": None}
    if players is not None:
        message["players"] = [
            text if seen is e else json.dumps(seen)
            for e, seen, text in zip(envelopes, players, texts, strict=True)
        ]
    if _serving_a_loop():
        async_to_sync(_deliver)(layer, group, message, envelopes)
    else:
        _publisher_loop.submit(partial(_deliver, layer, group, message, envelopes))


async def _deliver(
    layer: Any, group: str, message: dict[str, Any], envelopes: list[dict[str, Any]]
) -> None:
    """Send one message; a failure is logged (the change it reports stays committed)."""
    try:
        await layer.group_send(group, message)
    except Exception:
        seqs = f"{envelopes[0]['seq']}..{envelopes[-1]['seq']}"
        logger.exception("broadcast of events %s (%s) failed", seqs, envelopes[0]["type"])


def flush(timeout: float = 10.0) -> None:
    """Wait until the publisher loop has sent every message handed to it so far (at exit, and
    for a caller that must know its events have left: a test reading the layer)."""
    _publisher_loop.flush(timeout)


def _serving_a_loop() -> bool:
    """Whether this thread is sync code run for an event loop (a view under Daphne, a
    `sync_to_async` call): then the send goes through that loop, as `async_to_sync` does (the
    in-memory layer's queues belong to it)."""
    loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    pid = getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None)
    return loop is not None and pid == os.getpid() and loop.is_running()


class _PublisherLoop:
    """An event loop of the process's own, on a daemon thread, for sends from plain sync code
    (a GM worker, a command, a script): `async_to_sync` there starts a thread and an event loop
    per send (and channels-redis a connection per loop), which every publish would pay for.
    The caller does not wait for the send either, or every publish would pay for waking the
    loop's thread and being woken back: `submit` queues the send and returns; one task on the
    loop sends the queue's messages one at a time, in the order they were queued, so a
    campaign's events leave a process in seq order. A send that fails is logged by `_deliver`;
    the process waits for the queue at exit (`atexit`, `flush`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[Callable[[], Awaitable[None]]] | None = None
        self._pid = 0

    def submit(self, send: Callable[[], Awaitable[None]]) -> None:
        loop, queue = self._running()
        loop.call_soon_threadsafe(queue.put_nowait, send)

    def flush(self, timeout: float) -> None:
        """Wait (at most `timeout` seconds) until every send queued so far has been made."""
        if self._loop is None or self._pid != os.getpid() or not self._loop.is_running():
            return  # never started in this process: nothing queued
        loop, queue = self._running()
        asyncio.run_coroutine_threadsafe(queue.join(), loop).result(timeout)

    def _running(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Queue]:
        loop, queue = self._loop, self._queue
        alive = loop is not None and self._pid == os.getpid() and loop.is_running()
        if alive and queue is not None:
            return loop, queue
        with self._lock:  # first use in this process (or after a fork): start the thread
            if self._loop is None or self._pid != os.getpid() or not self._loop.is_running():
                started = threading.Event()
                loop = asyncio.new_event_loop()
                queue = asyncio.Queue()
                threading.Thread(
                    target=self._serve,
                    args=(loop, queue, started),
                    name="realtime-publisher",
                    daemon=True,
                ).start()
                started.wait()
                self._loop, self._queue, self._pid = loop, queue, os.getpid()
            return self._loop, self._queue

    @staticmethod
    def _serve(
        loop: asyncio.AbstractEventLoop, queue: asyncio.Queue, started: threading.Event
    ) -> None:
        asyncio.set_event_loop(loop)
        loop.create_task(_PublisherLoop._drain(queue))
        loop.call_soon(started.set)
        loop.run_forever()

    @staticmethod
    async def _drain(queue: asyncio.Queue) -> None:
        while True:
            send = await queue.get()
            try:
                await send()
            except Exception:  # _deliver logs its own failures; anything else, here
                logger.exception("publisher: a send failed")
            finally:
                queue.task_done()


_publisher_loop = _PublisherLoop()


@atexit.register
def _flush_at_exit() -> None:
    """A command or worker that ends right after its last commit still sends its events."""
    try:
        flush(timeout=5.0)
    except Exception:
        logger.exception("publisher: events still queued at exit were not sent")
