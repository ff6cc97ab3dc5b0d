"""The embedded default's channel layer (CHANNEL_LAYER=sqlite): channels-lite's aiosqlite layer on
the app's own SQLite database, so the events a task worker publishes reach the websockets a web
server holds, as Redis carries them in production, without Redis.

channels-lite's other layer runs its queries through the Django ORM, on the one thread the sync
code of a process shares: a slow view would hold every socket's events back. This one talks to
SQLite through aiosqlite (a thread per connection, a pool per event loop), off that thread. What
it adds to channels-lite's:

- the database is the one Django's connection opens when it connects, not when the layer is made:
  the test runner renames it after settings are read (an in-memory URI, or a file of its own);
- its connections use the database's busy timeout and init command (WAL) from DATABASES, and
  `synchronous=NORMAL` (a message lives seconds; no fsync per message);
- a pool lives as long as its event loop: the publisher's own loop (a worker's sends,
  `campaigns.realtime`) keeps one pool for the process; an `async_to_sync` call from plain sync
  code runs on a loop of its own, which closes after one message and takes its pool's
  connections and threads with it, as channels-redis does with its Redis connections;
- expiry times are UTC, as Django stores its own datetimes, whatever the machine's time zone;
- the layer closes as the server stops: under Daphne before the reactor stops
  (`close_when_daphne_stops`), as Daphne's loop is never closed and the pool's connection threads
  (not daemons) would otherwise keep a server with open websockets alive after Ctrl-C until
  honcho's SIGKILL; under uvicorn at its lifespan shutdown (`config.asgi`).
"""

import asyncio
import logging
import sys
import types
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import aiosqlite
from aiosqlitepool import SQLiteConnectionPool
from channels_lite.layers.aio import AIOSQLiteChannelLayer
from django.db import connections

logger = logging.getLogger(__name__)


class SQLiteChannelLayer(AIOSQLiteChannelLayer):
    async def _connect(self) -> aiosqlite.Connection:
        settings = connections[self.database].settings_dict
        name = str(settings["NAME"])
        options = settings.get("OPTIONS", {})
        conn = await aiosqlite.connect(
            name, uri=name.startswith("file:"), timeout=float(options.get("timeout", 5))
        )
        if options.get("init_command"):
            await conn.executescript(options["init_command"])
        await conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _pool(self, loop: asyncio.AbstractEventLoop) -> SQLiteConnectionPool:
        pool = self._layers.get(loop)
        if pool is None:
            pool = self._layers[loop] = SQLiteConnectionPool(self._connect, self.pool_size)
            self._close_with(loop, pool)
        return pool

    def _close_with(self, loop: asyncio.AbstractEventLoop, pool: SQLiteConnectionPool) -> None:
        """Close `pool` (its connections, their threads) when `loop` closes."""
        close_loop = loop.close

        def close(self_loop: asyncio.AbstractEventLoop) -> None:
            if self._layers.get(loop) is pool:
                del self._layers[loop]
            try:
                loop.run_until_complete(pool.close())
            except Exception:
                logger.exception("closing the SQLite channel layer's connections failed")
            loop.close = close_loop
            close_loop()

        loop.close = types.MethodType(close, loop)

    @asynccontextmanager
    async def connection(self):
        async with self._pool(asyncio.get_running_loop()).connection() as conn:
            yield conn

    async def close(self) -> None:
        """Stop this process's pollers and close the pool of the running loop; the pools of
        other loops close with their loops."""
        await super(AIOSQLiteChannelLayer, self).close()
        loop = asyncio.get_running_loop()
        pool = self._layers.pop(loop, None)
        if pool is not None:
            await pool.close()

    async def _receive_single_from_db(self, channel):
        # The poller's loop ends on cancel (a socket's loop closing cancels it); but the pool's
        # asyncio.wait_for (Python < 3.12) can swallow a cancel that lands as its query ends,
        # and the poller would then poll on while the loop waits for it to end, for ever.
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError
        return await super()._receive_single_from_db(channel)

    def _to_django_datetime(self, dt: datetime | None = None) -> str:
        # channels-lite passes naive local times (datetime.now()); astimezone reads them so.
        dt = datetime.now(UTC) if dt is None else dt.astimezone(UTC)
        return dt.strftime("%Y-%m-%d %H:%M:%S.%f")


async def close_sqlite_layer() -> None:
    """Close the SQLite layer, if it is this process's: its pollers stop, its pool's connections
    close and their threads end. A server calls it as it stops (uvicorn's lifespan shutdown,
    `config.asgi`; Daphne's reactor, `close_when_daphne_stops`)."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if isinstance(layer, SQLiteChannelLayer):
        await layer.close()


def close_when_daphne_stops() -> None:
    """Under Daphne (Twisted's asyncio reactor is running this process), close the SQLite layer
    before the reactor shuts down, so the process exits at once on SIGINT/SIGTERM. Elsewhere,
    nothing (uvicorn sends a lifespan shutdown instead: `config.asgi`)."""
    if "twisted.internet.reactor" not in sys.modules:
        return
    from twisted.internet import defer, reactor

    def close() -> defer.Deferred:
        return defer.Deferred.fromFuture(asyncio.ensure_future(close_sqlite_layer()))

    reactor.addSystemEventTrigger("before", "shutdown", close)
