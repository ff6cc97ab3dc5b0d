"""Task workers woken by the enqueue instead of polling the queue.

django-tasks-db's worker looks for a job every `--interval` seconds when it has none: four idle
workers at 0.5 s cost the host 1.2 s of CPU a minute between them, on a table that asks nothing
(docs/performance.md#capacitypy-how-many-tables-one-host-carries). On PostgreSQL a job's row,
once written, sends `NOTIFY` on `CHANNEL` (`notify_enqueued`, in the transaction that wrote it:
PostgreSQL delivers it when that commits, so a woken worker finds the row); the workers
(`manage.py task_worker`) hold a connection that `LISTEN`s and sleep on it until a job is
written or the earliest job scheduled for later (`run_after`) is due. A worker still looks
every `wait_max` seconds whatever it heard: a row put back to READY by hand sends nothing.

Elsewhere (SQLite, the embedded default) there is nothing to listen on, and the worker polls
every `interval` seconds as before. A listening connection that fails (the server restarted)
is dropped; the worker polls until it can listen again, and looks at the queue after every wait,
so a job written while it could not hear is found.
"""

import logging
import time
from datetime import datetime
from typing import Any

import psycopg
from django.db import connections

logger = logging.getLogger(__name__)

CHANNEL = "task_enqueued"


def notify_enqueued(sender: Any, instance: Any, created: bool, using: str, **kwargs: Any) -> None:
    """`post_save` of a job row (`DBTaskResult`): tell the listening workers a job was written."""
    connection = connections[using]
    if created and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"NOTIFY {CHANNEL}")


class Wakeup:
    """A worker's wait for work on database `alias`: `wait(seconds)` returns when a job is
    written (PostgreSQL) or `seconds` have passed, whichever is first; `listening` says whether
    an enqueue can wake it."""

    def __init__(self, alias: str, poll: float) -> None:
        self.alias = alias
        self.poll = poll  # seconds between looks when it cannot listen
        self.listener: Any = None  # the psycopg connection that LISTENs, while it works
        self.retry_at = 0.0  # when to try to listen again after a failure

    @property
    def listening(self) -> bool:
        return self.listener is not None

    def __enter__(self) -> "Wakeup":
        self._listen()
        return self

    def __exit__(self, *exc: object) -> None:
        self._drop()

    def _listen(self) -> None:
        connection = connections[self.alias]
        if connection.vendor != "postgresql" or time.monotonic() < self.retry_at:
            return
        params = connection.get_connection_params()
        for django_only in ("context", "cursor_factory"):  # Django's adapters, not needed here
            params.pop(django_only, None)
        try:
            self.listener = psycopg.connect(**params, autocommit=True)
            self.listener.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error:
            logger.warning("cannot LISTEN for jobs; polling every %g s meanwhile", self.poll)
            self._drop()
            self.retry_at = time.monotonic() + max(self.poll, 1.0)

    def _drop(self) -> None:
        if self.listener is not None:
            try:
                self.listener.close()
            finally:
                self.listener = None

    def wait(self, seconds: float) -> bool:
        """Sleep until a job is written or `seconds` have passed (at most `poll` seconds when
        not listening): whether an enqueue woke it."""
        if not self.listening:
            self._listen()
        if not self.listening:
            time.sleep(min(seconds, self.poll))
            return False
        try:
            woken = list(self.listener.notifies(timeout=seconds, stop_after=1))
            # Enqueues heard together: one look at the queue serves them all.
            list(self.listener.notifies(timeout=0))
            return bool(woken)
        except psycopg.Error:
            logger.warning("the connection listening for jobs failed; polling until it is back")
            self._drop()
            return False


def seconds_until(due: datetime | None, now: datetime, longest: float) -> float:
    """How long an idle worker may wait: until the job due first, at most `longest`."""
    if due is None:
        return longest
    return min(longest, max((due - now).total_seconds(), 0.0))
