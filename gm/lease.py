"""The lease a worker holds on the GM turn it runs, and the heartbeat that keeps it.

django-tasks-db has no lease of its own: a job claimed by a worker that dies stays `RUNNING` in
its table for ever. So the turn carries ours: `lease_owner` (this runner: host, process and a
nonce) until `lease_expires_at`. The runner renews it from a thread, because a model that is
thinking may stay silent for longer than a lease, and a runner that finds its lease gone (its
turn resumed elsewhere, or ended) stops before it writes anything more.
"""

import logging
import os
import socket
import threading
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections
from django.utils import timezone

from audit.services.common import campaign_lock
from campaigns.models import Turn
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
    `lost` is set once a renewal finds the lease held by another runner or the turn ended."""

    def __init__(self, *, turn_id: int, owner: str) -> None:
        self.turn_id = turn_id
        self.owner = owner
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"gm-lease-{turn_id}", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        interval = settings.GM_LEASE_SECONDS / 3
        try:
            while not self._stop.wait(interval):
                if not self._renew():
                    self.lost.set()
                    return
        finally:
            connections.close_all()  # this thread's own connection

    def _renew(self) -> bool:
        try:
            return lease_renew(turn_id=self.turn_id, owner=self.owner)
        except Exception:  # an outage: keep beating; if it outlasts the lease, the watchdog acts
            logger.exception("lease renewal of turn %s failed", self.turn_id)
            return True


def turn_lock(turn: Turn) -> Turn:
    """Campaign first, then the turn: the lock order of dispatch and undo, so the runner's
    writes and theirs serialise instead of deadlocking."""
    campaign_lock(turn.campaign_id)
    return Turn.objects.select_for_update().get(pk=turn.pk)


def lease_hold(turn: Turn, owner: str) -> Turn:
    """The locked turn, if `owner` still runs it; TurnStopped(LOST) if not."""
    current = turn_lock(turn)
    if current.status != Turn.Status.RUNNING or current.lease_owner != owner:
        raise TurnStopped(TurnStopped.LOST)
    return current
