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
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, connections
from django.utils import timezone

from campaigns.models import Campaign, Turn
from gm.base import TurnStopped

logger = logging.getLogger(__name__)
# How long after a lease ends its watchdog looks: a heartbeat a moment late is not a death.
WATCH_GRACE = timedelta(seconds=1)


def _campaign_locked(campaign_id: Any) -> bool:
    """The campaign row locked and nothing of it read (the runner's writes need neither its log
    head nor its fog); False if it is gone."""
    return Campaign.objects.select_for_update().filter(pk=campaign_id).exists()


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
            now = (
                Turn.objects.filter(pk=self.turn_id)
                .values("reverted_at", "cancel_requested_at")
                .first()
            )
        except Exception:  # an outage: the runner's own steps will meet it too
            logger.exception("stop watch of turn %s failed", self.turn_id)
            return
        if now is None:
            return
        if now["reverted_at"] is not None:
            self.stop(TurnStopped.UNDONE)
        elif now["cancel_requested_at"] is not None:
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


def turn_lock(turn: Turn) -> Turn:
    """Campaign first, then the turn: the lock order of dispatch and undo, so the runner's
    writes and theirs serialise instead of deadlocking."""
    _campaign_locked(turn.campaign_id)
    return Turn.objects.select_for_update().get(pk=turn.pk)


def lease_hold(turn: Turn, owner: str) -> Turn:
    """The locked turn, if `owner` still runs it; TurnStopped(LOST) if not."""
    current = turn_lock(turn)
    if current.status != Turn.Status.RUNNING or current.lease_owner != owner:
        raise TurnStopped(TurnStopped.LOST)
    return current


def lease_check(turn: Turn, owner: str) -> None:
    """`lease_hold` for a write that needs the locks and the check but not the turn: the same
    locks in the same order, two narrow reads instead of two whole rows (a turn's runner takes
    it at every round it stores)."""
    held = Turn.objects.select_for_update().filter(
        pk=turn.pk, status=Turn.Status.RUNNING, lease_owner=owner
    )
    if not _campaign_locked(turn.campaign_id) or not held.exists():
        raise TurnStopped(TurnStopped.LOST)
