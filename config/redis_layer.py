"""The production channel layer (CHANNEL_LAYER=redis): Redis pub/sub, through channels-redis's
`RedisPubSubChannelLayer`.

A transaction's events leave a process as one message to its campaign's group, and reach every
web process that holds a socket of that campaign, once (`web.feeds`: one subscription per
campaign per process). channels-redis's default layer keeps a sorted set per channel: a group
send cost four round trips to Redis (the group's members, their expiry, the capacity check and
the write) and every receive four more (a cleanup script, the blocking pop, a backup copy and
its removal), each a write made holding the GIL on the event loop that also serves every
socket. Pub/sub costs one PUBLISH per group send, and a receive is a message Redis pushes down
the process's one subscribed connection: the pages' events reached their sockets in a third of
the time at 100 tables, and the host carried 40% more tables
(docs/performance.md#capacitypy-how-many-tables-one-host-carries).

Pub/sub delivers at most once, to the processes subscribed when it is published, and keeps
nothing: a process that was not listening misses the message, as it did past the sorted sets'
capacity. The events are numbered (`seq`): a page that misses one sees the gap and resyncs
(docs/architecture.md#realtime). What this module adds to channels-redis's layer:

- a lost connection to Redis ends every receive on it with the error (channels-redis's reader
  logs it and retries for ever, its listeners never knowing): each feed ends its sockets with
  UNAVAILABLE, their pages reconnect, and the new subscriptions connect anew, as a blocking
  read that failed did under the default layer;
- a channel that has left its last group is unsubscribed after the one message it still gets
  (the feed's own stop message, `web.feeds.CampaignFeed._stop`), where channels-redis keeps
  every channel ever made subscribed until its receive is cancelled;
- a channel whose subscription failed is forgotten.
"""

import asyncio
import logging
from typing import Any

from channels_redis.pubsub import (
    RedisPubSubChannelLayer,
    RedisPubSubLoopLayer,
    RedisSingleShardConnection,
)
from channels_redis.utils import _close_redis, _wrap_close, decode_hosts
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

READER_POLL = 0.1  # seconds a subscription's reader waits for a message before it looks again
# What a lost connection to Redis raises: the network's errors and redis-py's own.
LOST = (OSError, RedisConnectionError, RedisTimeoutError)


class _Lost:
    """Put in a channel's queue when the connection its subscription lived on was lost."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class RedisPubSubLayer(RedisPubSubChannelLayer):
    """The `BACKEND` of CHANNEL_LAYER=redis: one layer per event loop, as channels-redis's."""

    def deserialize(self, message: Any) -> Any:
        if isinstance(message, _Lost):  # what the channel's queue held: no message, the error
            raise message.error
        return super().deserialize(message)

    def _get_layer(self) -> "_LoopLayer":
        loop = asyncio.get_running_loop()
        layer = self._layers.get(loop)
        if layer is None:
            layer = self._layers[loop] = _LoopLayer(*self._args, **self._kwargs, channel_layer=self)
            _wrap_close(self, loop)
        return layer


class _LoopLayer(RedisPubSubLoopLayer):
    def __init__(self, hosts: Any = None, **kwargs: Any) -> None:
        super().__init__(hosts, **kwargs)
        self._shards = [_Shard(host, self) for host in decode_hosts(hosts)]
        self._leaving: set[str] = set()  # channels in no group: forgotten after one message

    async def _subscribe_to_channel(self, channel: str) -> None:
        try:
            await super()._subscribe_to_channel(channel)
        except BaseException:
            self.channels.pop(channel, None)
            raise

    async def receive(self, channel: str) -> Any:
        try:
            message = await super().receive(channel)
        except LOST:
            self._forget(channel)
            raise
        if channel in self._leaving:
            self._forget(channel)
            await self._get_shard(channel).unsubscribe(channel)
        return message

    async def group_add(self, group: str, channel: str) -> None:
        self._leaving.discard(channel)
        await super().group_add(group, channel)

    async def group_discard(self, group: str, channel: str) -> None:
        await super().group_discard(group, channel)
        if not any(channel in members for members in self.groups.values()):
            self._leaving.add(channel)

    def _forget(self, channel: str) -> None:
        self.channels.pop(channel, None)
        self._leaving.discard(channel)
        for name, members in list(self.groups.items()):
            members.discard(channel)
            if not members:
                del self.groups[name]

    def lost(self, shard: "_Shard", error: BaseException) -> None:
        """`shard`'s connection was lost: every channel subscribed on it hears so."""
        for channel, queue in list(self.channels.items()):
            if self._get_shard(channel) is shard:
                queue.put_nowait(_Lost(error))
        for group in list(self.groups):
            if self._get_shard(group) is shard:
                for channel in self.groups[group]:
                    if channel in self.channels and self._get_shard(channel) is not shard:
                        self.channels[channel].put_nowait(_Lost(error))


class _Shard(RedisSingleShardConnection):
    """channels-redis's connection to one Redis, whose reader ends at a lost connection (and
    tells every channel on it, `_LoopLayer.lost`) instead of retrying behind their backs; the
    next subscription connects anew."""

    async def _do_receiving(self) -> None:
        while True:
            try:
                if self._pubsub and self._pubsub.subscribed:
                    message = await self._pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=READER_POLL
                    )
                    self._receive_message(message)
                else:
                    await asyncio.sleep(READER_POLL)
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except LOST as error:  # a timeout too: a read that outlasted the socket's timeout
                logger.error("lost the channel layer's subscriptions: %s", error)
                await self._reset()
                self.channel_layer.lost(self, error)
                return
            except BaseException:
                logger.exception("Unexpected exception in receive task")
                await asyncio.sleep(1)

    async def _reset(self) -> None:
        """Drop the connection and every subscription on it; the receive task ends here."""
        self._receive_task = None
        self._subscribed_to = set()
        redis, self._redis, self._pubsub = self._redis, None, None
        if redis is not None:
            try:
                await _close_redis(redis)
            except Exception:  # a connection already gone cannot be closed cleanly
                logger.debug("closing a lost Redis connection failed", exc_info=True)
