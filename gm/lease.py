"""The lease a worker holds on the GM turn it runs, and the heartbeat that keeps it.

django-tasks-db has no lease of its own: a job claimed by a worker that dies stays `RUNNING` in
its table for ever. So the turn carries ours: `lease_owner` (this runner: host, process and a
nonce) until `lease_expires_at`. The runner renews it from a thread, because a model that is
thinking may stay silent for longer than a lease, and a runner that finds its lease gone (its
turn resumed elsewhere, or ended) stops before it writes anything more.

The same thread watches for a stop (the turn cancelled or undone) every GM_STOP_POLL_SECONDS, so
Stop does not wait for the model to finish its sentence: it hangs up whatever the provider is
streaming (`Heartbeat.hang_ups`), and the provider's read ends at once.
"""

import contextlib
import functools
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, connections
from django.utils import timezone

from campaigns.models import Campaign, Turn
from gm import rows
from gm.base import TurnStopped

logger = logging.getLogger(__name__)
# How long after a lease ends its watchdog looks: a heartbeat a moment late is not a death.
WATCH_GRACE = timedelta(seconds=1)


def lease_deadline() -> datetime:
    return timezone.now() + timedelta(seconds=settings.GM_LEASE_SECONDS)


def new_owner() -> str:
    """Who runs the turn: an operator can find the process; the nonce tells attempts apart."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def lease_renew(*, turn_id: int, owner: str) -> bool:
    """Extend the lease if `owner` still holds it; False when it does not (any more)."""
    renewed = Turn.objects.filter(pk=turn_id, status=Turn.Status.RUNNING, lease_owner=owner).update(
        lease_expires_at=lease_deadline()
    )
    return renewed == 1


class Heartbeat:
    """Renews the lease every third of GM_LEASE_SECONDS on a thread of its own until stopped;
    `lost` is set once a renewal finds the lease held by another runner or the turn ended.

    Between beats it looks every GM_STOP_POLL_SECONDS whether the turn was cancelled or undone:
    then `stopped` is set (`why` says which) and every hang-up registered by `hold` is called,
    from this thread, to close the stream the runner is blocked reading. A thread of its own
    cannot see what its caller has not committed, so a runner started inside a transaction
    (only tests do that: the runner's own writes are durable) watches at its steps only."""

    def __init__(self, *, turn_id: int, owner: str) -> None:
        self.turn_id = turn_id
        self.owner = owner
        self.lost = threading.Event()
        self.stopped = threading.Event()
        self.why = ""
        self._hang_ups: list[Callable[[], None]] = []
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._watch = not connection.in_atomic_block
        self._thread = threading.Thread(target=self._beat, name=f"gm-lease-{turn_id}", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def hold(self, hang_up: Callable[[], None]) -> Callable[[], None]:
        """Call `hang_up` when the turn is stopped (at once, if it already is); the function
        returned forgets it again, once the stream it closes has ended."""
        with self._guard:
            self._hang_ups.append(hang_up)
            stopped = self.stopped.is_set()
        if stopped:
            _call(hang_up)

        def release() -> None:
            with self._guard:
                if hang_up in self._hang_ups:
                    self._hang_ups.remove(hang_up)

        return release

    def stop(self, why: str) -> None:
        """The turn must stop (`why`, a TurnStopped reason): hang up every open stream."""
        with self._guard:
            if self.stopped.is_set():
                return
            self.why = why
            self.stopped.set()
            hang_ups = list(self._hang_ups)
        for hang_up in hang_ups:
            _call(hang_up)

    def _beat(self) -> None:
        interval = settings.GM_LEASE_SECONDS / 3
        poll = settings.GM_STOP_POLL_SECONDS if self._watch else interval
        poll = min(poll, interval)
        next_renewal = interval
        waited = 0.0
        try:
            while not self._stop.wait(poll):
                waited += poll
                if self._watch and not self.stopped.is_set():
                    self._look()
                if waited + 1e-9 >= next_renewal:
                    next_renewal += interval
                    if not self._renew():
                        self.lost.set()
                        return
        finally:
            connections.close_all()  # this thread's own connection

    def _look(self) -> None:
        try:
            now = turn_now(self.turn_id)
        except Exception:  # an outage: the runner's own steps will meet it too
            logger.exception("stop watch of turn %s failed", self.turn_id)
            return
        if now is None:
            return
        if now.reverted_at is not None:
            self.stop(TurnStopped.UNDONE)
        elif now.cancel_requested_at is not None:
            self.stop(TurnStopped.CANCELLED)

    def _renew(self) -> bool:
        try:
            return lease_renew(turn_id=self.turn_id, owner=self.owner)
        except Exception:  # an outage: keep beating; if it outlasts the lease, the watchdog acts
            logger.exception("lease renewal of turn %s failed", self.turn_id)
            return True


def _call(hang_up: Callable[[], None]) -> None:
    try:
        hang_up()
    except Exception:  # a stream that is already closed, or closing: nothing more to do
        logger.debug("hang-up failed", exc_info=True)


def response_hang_up(response: Any) -> Callable[[], None]:
    """A hang-up for an httpx response being read on another thread: shut its socket down,
    which wakes a read blocked on it (closing the response from another thread would not; the
    reader closes it as its read fails)."""

    def hang_up() -> None:
        stream = (getattr(response, "extensions", None) or {}).get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is None:
            response.close()
            return
        with contextlib.suppress(OSError):  # already closed by the other side
            sock.shutdown(socket.SHUT_RDWR)

    return hang_up


class TurnNow(NamedTuple):
    """What a runner looks at between its steps: who holds the turn, and whether it must stop."""

    status: str
    lease_owner: str
    reverted_at: datetime | None
    cancel_requested_at: datetime | None


def turn_now(turn_id: int) -> TurnNow | None:
    """The turn's `TurnNow` as it is now, or None if it is gone."""
    # Plain SQL: a hot read (every step of every turn, and the stop watch every second).
    found = rows.fetch_one(_now_sql(), [turn_id])
    return None if found is None else TurnNow(*found)


@functools.cache
def _now_sql() -> str:
    read = ", ".join(rows.column(Turn, name) for name in TurnNow._fields)
    return f"SELECT {read} FROM {rows.table(Turn)} WHERE {rows.column(Turn, 'pk')} = %s"


def turn_lock(turn: Turn) -> Turn:
    """Campaign first, then the turn: the lock order of dispatch and undo, so the runner's
    writes and theirs serialise instead of deadlocking."""
    # Plain SQL: both locks in one statement (`_locks_sql`), which the ORM cannot say.
    found = rows.fetch_one(_locks_sql(held=False), [turn.campaign_id, turn.pk])
    if found is None:
        raise Turn.DoesNotExist(f"No turn {turn.pk}.")
    return rows.instance(Turn, found)


def lease_hold(turn: Turn, owner: str) -> Turn:
    """The locked turn, if `owner` still runs it; TurnStopped(LOST) if not."""
    current = turn_lock(turn)
    if current.status != Turn.Status.RUNNING or current.lease_owner != owner:
        raise TurnStopped(TurnStopped.LOST)
    return current


def lease_check(turn: Turn, owner: str) -> None:
    """`lease_hold` for a write that needs the locks and the check but not the turn: the same
    locks in the same order, one narrow read instead of a whole row (a turn's runner takes it
    at every round it stores)."""
    params = [turn.campaign_id, turn.pk, Turn.Status.RUNNING, owner]
    # Plain SQL: both locks and the check in one statement (`_locks_sql`), at every round.
    if rows.fetch_one(_locks_sql(held=True), params) is None:
        raise TurnStopped(TurnStopped.LOST)


@functools.cache
def _locks_sql(*, held: bool) -> str:
    """Lock the campaign row, then the turn's (`held`: only if it is running under the lease
    owner given), and read the turn: the whole row, or (`held`) its id. The turn's scan waits
    for the campaign's lock, a condition of it, and a row is locked only once it is read, so
    the campaign's lock is always taken first, whatever the plan."""
    c, t = functools.partial(rows.column, Campaign), functools.partial(rows.column, Turn)
    read = t("pk") if held else rows.columns(Turn, "turn")
    owned = f" AND {t('status')} = %s AND {t('lease_owner')} = %s" if held else ""
    return (
        f"WITH campaign AS MATERIALIZED (SELECT 1 FROM {rows.table(Campaign)} "
        f"WHERE {c('pk')} = %s FOR UPDATE) "
        f"SELECT {read} FROM {rows.table(Turn)} AS turn WHERE {t('pk')} = %s{owned} "
        "AND EXISTS (SELECT 1 FROM campaign) FOR UPDATE"
    )
