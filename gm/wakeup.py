"""Task workers woken by the enqueue instead of polling the queue.

django-tasks-db's worker looks for a job every `--interval` seconds when it has none: four idle
workers at 0.5 s cost the host 1.2 s of CPU a minute between them, on a table that asks nothing
(docs/performance.md#capacitypy-how-many-tables-one-host-carries). A job's row, once written,
sends `NOTIFY` on `CHANNEL` (`notify_enqueued`, in the transaction that wrote it:
PostgreSQL delivers it when that commits, so a woken worker finds the row); the workers
(`manage.py task_worker`) hold a connection that `LISTEN`s and sleep on it until a job is
written or the earliest job scheduled for later (`run_after`) is due. A worker still looks
every `wait_max` seconds whatever it heard: a row put back to READY by hand sends nothing.
A job scheduled for later (`run_after`: a turn's watchdog, an approval's expiry) says when in
the NOTIFY's payload: the workers that hear it note the time and sleep on instead of every one
of them looking at the queue for a job that is not due (a turn's claim writes one).

A listening connection that fails (the server restarted) is dropped; the worker polls every
`interval` seconds until it can listen again, and looks at the queue after every wait, so a job
written while it could not hear is found.

The worker itself wakes the wait too (`poke`, through a pipe the wait selects on with the
listening connection): a job of its own threads has ended and left room for another, or a
signal asks it to stop.
"""

import contextlib
import logging
import os
import select
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from django.db import connections
from django.utils import timezone
from django_tasks_db.models import get_date_max

logger = logging.getLogger(__name__)

CHANNEL = "task_enqueued"


def notify_enqueued(sender: Any, instance: Any, created: bool, using: str, **kwargs: Any) -> None:
    """`post_save` of a job row (`DBTaskResult`): tell the listening workers a job was written,
    and when it is due if that is later (the payload: its `run_after`; empty: ready now)."""
    connection = connections[using]
    if created:
        later = instance.run_after != get_date_max() and instance.run_after > timezone.now()
        with connection.cursor() as cursor:
            # pg_notify(): NOTIFY takes no bound parameter (its payload is a literal).
            cursor.execute(
                "SELECT pg_notify(%s, %s)",
                [CHANNEL, instance.run_after.isoformat() if later else ""],
            )


@dataclass
class Heard:
    """What ended a wait: a job ready now was written (`job`), the earliest `due` of the jobs
    written for later, a `poke`; none of them: its time ran out."""

    job: bool = False
    due: datetime | None = None
    poked: bool = False

    @property
    def quiet(self) -> bool:
        return not (self.job or self.due or self.poked)

    def noted(self, payload: str) -> None:
        if not payload:
            self.job = True
            return
        try:
            due = datetime.fromisoformat(payload)
        except ValueError:  # not ours: look at the queue, as for any job
            self.job = True
            return
        self.due = due if self.due is None else min(self.due, due)


class Wakeup:
    """A worker's wait for work on database `alias`: `wait(seconds)` returns when a job is
    written or `seconds` have passed, whichever is first; `listening` says whether
    an enqueue can wake it."""

    def __init__(self, alias: str, poll: float) -> None:
        self.alias = alias
        self.poll = poll  # seconds between looks when it cannot listen
        self.listener: Any = None  # the psycopg connection that LISTENs, while it works
        self.retry_at = 0.0  # when to try to listen again after a failure
        self._ending = False  # the server said it is closing the listening session
        self._poked, self._poke = os.pipe()  # poke() writes a byte: the wait returns
        os.set_blocking(self._poked, False)
        os.set_blocking(self._poke, False)

    @property
    def listening(self) -> bool:
        return self.listener is not None

    def __enter__(self) -> "Wakeup":
        self._listen()
        return self

    def __exit__(self, *exc: object) -> None:
        self._drop()
        os.close(self._poked)
        os.close(self._poke)

    def poke(self) -> None:
        """End the current or next wait now. Safe from any thread and from a signal handler."""
        with contextlib.suppress(BlockingIOError, OSError):  # already poked, or closed
            os.write(self._poke, b"!")

    def _listen(self) -> None:
        connection = connections[self.alias]
        if time.monotonic() < self.retry_at:
            return
        params = connection.get_connection_params()
        for django_only in ("context", "cursor_factory"):  # Django's adapters, not needed here
            params.pop(django_only, None)
        try:
            self.listener = psycopg.connect(**params, autocommit=True)
            self.listener.execute(f"LISTEN {CHANNEL}")
            self._ending = False
            self.listener.add_notice_handler(self._notice)
        except psycopg.Error:
            logger.warning("cannot LISTEN for jobs; polling every %g s meanwhile", self.poll)
            self._drop()
            self.retry_at = time.monotonic() + max(self.poll, 1.0)

    def _notice(self, diagnostic: psycopg.errors.Diagnostic) -> None:
        """An error the server sends an idle session reaches libpq as a notice: a FATAL one (a
        restart, pg_terminate_backend) means it is closing this session."""
        if diagnostic.severity_nonlocalized in ("FATAL", "PANIC"):
            self._ending = True

    def _drop(self) -> None:
        if self.listener is not None:
            try:
                self.listener.close()
            finally:
                self.listener = None

    def wait(self, seconds: float) -> Heard:
        """Sleep until a job is written, `poke` is called or `seconds` have passed (at most
        `poll` seconds when not listening): what woke it."""
        heard = Heard()
        if not self.listening:
            self._listen()
        listener = self.listener
        try:
            fd = listener.fileno() if listener is not None else None
            ready = [self._poked] + ([fd] if fd is not None else [])
            timeout = seconds if fd is not None else min(seconds, self.poll)
            readable, _, _ = select.select(ready, [], [], timeout)
        except (OSError, psycopg.Error):  # the listening connection's socket is gone
            self._failed()
            return heard
        if self._poked in readable:
            heard.poked = True
            with contextlib.suppress(BlockingIOError):
                os.read(self._poked, 4096)  # every poke so far: one look serves them all
        if fd is None or fd not in readable:
            return heard
        try:
            # Enqueues heard together: one look at the queue serves them all.
            for notify in listener.notifies(timeout=0):
                heard.noted(notify.payload)
        except (OSError, psycopg.Error):
            self._failed()
            return heard
        if self._ending:  # the server said it ends the session (its FATAL comes before the EOF)
            self._failed()
        return heard

    def _failed(self) -> None:
        logger.warning("the connection listening for jobs failed; polling until it is back")
        self._drop()


def seconds_until(due: datetime | None, now: datetime, longest: float) -> float:
    """How long an idle worker may wait: until the job due first, at most `longest`."""
    if due is None:
        return longest
    return min(longest, max((due - now).total_seconds(), 0.0))
