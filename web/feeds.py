"""A campaign's feed in one server process: one channel-layer subscription per campaign, however
many of its sockets the process holds, forwarding each event batch to all of them in order.

A channel per socket would make channels-redis wake one receive loop per socket (tasks, futures
and a channel-name check each) for every broadcast before any byte left; the feed receives the
batch once and hands its texts (serialised once, by `campaigns.realtime`) to each socket
directly: the GM's texts to a GM's socket, the players' to a player's (a batch carries both,
worked out once by the publisher; `campaigns.visibility`). What that saves a server:
docs/performance.md#ws_fanoutpy-an-undo-reaching-10-50-200-websocket-clients.

After a batch that changed the board or a turn (`web.pages.fragments.fragments_changed`), the
feed draws them for each of its sockets whose page asked for them (`Listener.fragments`) and
sends them as `fragment` messages: once per class of viewer, off the receive loop (events keep
flowing while it draws), and coalesced as the page's own fetches were (one drawing on its way,
and one more after it for whatever batches asked meanwhile). It draws in a thread of the
executor's pool, not in the process's one thread for sync code that `database_sync_to_async`
uses by default (where the sockets' connects run too): a table's drawing does not queue behind
another table's, nor a page's connect behind a drawing; one campaign's drawings stay one at a
time, in order, and each returns its connection to the pool as it ends. The page no longer asks
for them after each event; five pages of a table cost one drawing per class and no request.
"""

import asyncio
import json
import logging
import time
import weakref
from typing import Any, Protocol

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import connections

from audit.selectors import Rights
from campaigns.realtime import EVENTS_MESSAGE, LAYER_UNAVAILABLE, group_name
from campaigns.visibility import Sight
from web.pages.fragments import fragments_changed, part_of, pushed_fragments, undrawn

logger = logging.getLogger(__name__)

# What the feed sends its own channel to end its receive loop (see `CampaignFeed._stop`).
STOP_MESSAGE = "campaign.feed.stop"


class Listener(Protocol):
    sight: Sight  # how its viewer sees the world, decided when the socket connected
    rights: Rights | None  # its viewer's, when its page wants fragments sent (else None)
    fragments: frozenset[str]  # which: "board", "turn"

    async def forward(self, texts: list[str]) -> None:
        """Send the events (JSON texts, in seq order) to the socket."""

    async def feed_lost(self) -> None:
        """The feed can no longer receive (the channel layer failed): end the socket."""


class CampaignFeed:
    """The subscription of this process (this event loop) to one campaign's group."""

    def __init__(self, campaign_id: Any, registry: dict[str, "CampaignFeed"]) -> None:
        self.campaign_id = campaign_id
        self.group = group_name(campaign_id)
        self.registry = registry
        self.layer = get_channel_layer()
        self.group_expiry = getattr(self.layer, "group_expiry", 86400)
        self.lock = asyncio.Lock()
        self.listeners: dict[Listener, None] = {}  # insertion-ordered set
        self.channel: str | None = None
        self.task: asyncio.Task | None = None
        self.joined_at = 0.0
        self.drawing: asyncio.Task | None = None  # the fragments on their way to the pages
        self.changed: dict[Any, int] = {}  # what batches changed since ("board", turn ids): by
        # the number of the last event that changed it
        self.shown: dict[Any, int] = {}  # the event number each part was last drawn at

    async def join(self, listener: Listener) -> None:
        """Add `listener`. On return the feed's channel is in the group (added anew, which also
        renews its membership before the layer's group expiry), so every event committed from
        now on reaches the listener."""
        async with self.lock:
            try:
                channel = self.channel or await self.layer.new_channel()
                await self.layer.group_add(self.group, channel)
            except BaseException:
                if not self.listeners:
                    self._forget()
                raise
            # The receive loop may have failed meanwhile (and forgotten the channel): the
            # channel is still a valid one, in the group, for a new loop to receive on.
            self.channel, self.joined_at = channel, time.monotonic()
            self.listeners[listener] = None
            if self.task is None:
                self.task = asyncio.ensure_future(self._receive(channel))

    async def leave(self, listener: Listener) -> None:
        """Drop `listener`; the last one out ends the subscription."""
        async with self.lock:
            self.listeners.pop(listener, None)
            if self.listeners or self.channel is None:
                return
            channel, task = self.channel, self.task
            self._forget()
            await self.layer.group_discard(self.group, channel)
            if task is not None and not task.done():
                await self._stop(channel, task)

    async def _stop(self, channel: str, task: asyncio.Task) -> None:
        """End the receive loop by a message of its own rather than by cancelling it: a receive
        cancelled while it waits for channels-redis's per-process receive lock leaves that lock
        behind (bound to this event loop), where the next loop's receive fails on it."""
        try:
            await self.layer.send(channel, {"type": STOP_MESSAGE})
        except BaseException:
            task.cancel()
            raise
        finally:
            await asyncio.gather(task, return_exceptions=True)

    def _forget(self) -> None:
        """Out of the registry, with no channel: the next join starts a new subscription."""
        self.task, self.channel = None, None
        if self.registry.get(self.group) is self:
            del self.registry[self.group]

    async def _receive(self, channel: str) -> None:
        try:
            while (message := await self.layer.receive(channel))["type"] != STOP_MESSAGE:
                if message["type"] != EVENTS_MESSAGE:
                    logger.error("feed of %s ignored a %r message", self.group, message["type"])
                    continue
                await self._forward(message)
                if time.monotonic() - self.joined_at > self.group_expiry / 2:
                    await self.layer.group_add(self.group, channel)
                    self.joined_at = time.monotonic()
            return
        except asyncio.CancelledError:
            raise
        except LAYER_UNAVAILABLE:
            logger.exception("channel layer unavailable; feed of %s ended", self.group)
        except Exception:
            logger.exception("feed of %s failed", self.group)
        listeners = list(self.listeners)
        self.listeners.clear()
        self._forget()
        for listener in listeners:
            await listener.feed_lost()

    async def _forward(self, message: dict[str, Any]) -> None:
        """The batch to each socket as its viewer may see it: the GM's texts to a GM, the
        players' (where the publisher made any) to everyone else."""
        texts, players = message["texts"], message.get("players")
        for listener in list(self.listeners):
            seen = texts if players is None or listener.sight is Sight.GM else players
            try:
                await listener.forward(seen)
            except Exception:  # one socket's failure is not the others'
                logger.exception("forwarding to a socket of %s failed", self.group)
        wanted = {part for listener in self.listeners for part in listener.fragments}
        if wanted:
            changed = fragments_changed([json.loads(text) for text in texts])
            self._push({c: s for c, s in changed.items() if part_of(c) in wanted})

    def _push(self, changed: dict[Any, int]) -> None:
        """Draw what the batch changed for the pages that asked for it: now, or once the
        drawings on their way are sent (with whatever else was asked for meanwhile)."""
        if not changed:
            return
        for part, seq in changed.items():
            if seq <= self.shown.get(part, -1):  # a drawing already sent shows it
                continue
            self.changed[part] = max(seq, self.changed.get(part, seq))
        if not self.changed:
            return
        if self.drawing is None or self.drawing.done():
            self.drawing = asyncio.ensure_future(self._draw())

    async def _draw(self) -> None:
        """Draw the changed fragments for each page that wants them and send each part as soon
        as it is drawn; again while batches asked meanwhile, unless the drawings sent showed
        their events already (the GM's last message and the turn's end are committed together,
        and one drawing shows both). A drawing that fails tells the pages to fetch what was not
        sent yet (`html` null)."""
        loop = asyncio.get_running_loop()
        while self.changed:
            changed, self.changed = self.changed, {}
            pages = [listener for listener in self.listeners if listener.rights is not None]
            viewers = [(page.rights, page.fragments) for page in pages]
            drawn: asyncio.Queue = asyncio.Queue()  # each part's messages, from the pool thread
            sent = _into(loop, drawn)
            sender = asyncio.ensure_future(self._send_each(pages, drawn))
            try:
                drawn_at, _ = await database_sync_to_async(
                    _pushed_in_pool_thread, thread_sensitive=False
                )(campaign_id=self.campaign_id, viewers=viewers, changed=changed, sent=sent)
                failed = False
            except Exception:
                logger.exception("drawing fragments of %s for its pages failed", self.group)
                drawn_at, failed = -1, True
            drawn.put_nowait(None)  # after every part the thread sent: it has returned
            done = await sender
            if failed:
                unsent = {part: seq for part, seq in changed.items() if part not in done}
                await self._send(pages, [undrawn(unsent, wanted) for _, wanted in viewers])
            self.shown.update(dict.fromkeys(changed, drawn_at))
            self.changed = {
                part: seq
                for part, seq in self.changed.items()
                if part not in changed or seq > drawn_at
            }

    async def _send_each(self, pages: list[Listener], drawn: asyncio.Queue) -> set[Any]:
        """Send each part's messages as they come, until None; the parts sent."""
        done = set()
        while (item := await drawn.get()) is not None:
            part, messages = item
            done.add(part)
            await self._send(pages, messages)
        return done

    async def _send(self, pages: list[Listener], drawn: list[list[dict[str, Any]]]) -> None:
        for page, messages in zip(pages, drawn, strict=True):
            if page not in self.listeners or not messages:  # gone while it was drawn
                continue
            try:
                await page.forward([json.dumps(message) for message in messages])
            except Exception:
                logger.exception("sending fragments to a socket of %s failed", self.group)


def _into(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> Any:
    """What the drawing thread calls with each part it drew: put on `queue`, in the loop."""

    def sent(part: Any, messages: list[list[dict[str, Any]]]) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (part, messages))

    return sent


def _pushed_in_pool_thread(**kwargs: Any) -> tuple[int, list[list[dict[str, Any]]]]:
    """`pushed_fragments`, its connection closed as it ends (given back to the pool), whatever
    CONN_MAX_AGE says: a thread of the executor's pool outlives the drawing, and no connection
    stays with it."""
    try:
        return pushed_fragments(**kwargs)
    finally:
        connections.close_all()


# Per event loop: a loop's tasks and the layer's connections do not cross loops.
_feeds: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, CampaignFeed]]" = (
    weakref.WeakKeyDictionary()
)


def campaign_feed(campaign_id: Any) -> CampaignFeed:
    """The feed of the campaign in this process, made on first use."""
    registry = _feeds.setdefault(asyncio.get_running_loop(), {})
    group = group_name(campaign_id)
    if group not in registry:
        registry[group] = CampaignFeed(campaign_id, registry)
    return registry[group]
