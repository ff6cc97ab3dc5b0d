"""`manage.py task_worker`: django-tasks-db's worker (`db_worker`, every option of it), woken by
the enqueue on PostgreSQL instead of polling the queue (`gm.wakeup`); on other databases it polls
every `--interval` seconds, as `db_worker` does. The Procfile's `worker:` runs it.

It runs up to `--threads` jobs at once, each on a thread of its own: a GM turn holds its job for
its whole stream, mostly waiting on the model, so one process carries several turns (a process
per turn would cost ~180 MB each). The main thread claims a job whenever fewer than that many
run, and sleeps otherwise, until a thread ends (it pokes the wait), a job is written or one is
due. Each thread's database connections are its own and are closed when its job ends; the
leases a turn is run under are per turn (`gm.lease`), whatever thread holds them.

SIGTERM or SIGINT stops the claims, lets the running jobs end, then exits; a second signal exits
at once, and the turns it held resume elsewhere when their leases run out, as after a crash.
"""

import logging
import os
import random
import signal
import sys
import threading
import time
from argparse import ArgumentParser, ArgumentTypeError
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from types import FrameType
from typing import Any

from django.db import close_old_connections, connections, router
from django.db.models import Q, QuerySet
from django.db.utils import OperationalError
from django.utils import timezone
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult, get_date_max
from django_tasks_db.utils import exclusive_transaction, is_locked_database_exception

from gm.wakeup import Wakeup, seconds_until

logger = logging.getLogger("django_tasks_db")


def _queue(backend_name: str, queues: list[str] | None, excluded: list[str]) -> QuerySet:
    """A worker's queue: its backend's jobs in the queues it serves (None: every queue)."""
    tasks = DBTaskResult.objects.filter(backend_name=backend_name)
    if queues is not None:
        tasks = tasks.filter(queue_name__in=queues)
    if excluded:
        tasks = tasks.exclude(queue_name__in=excluded)
    return tasks


# A worker looks at the queue after every wake-up and every job it ends, with these two reads.
# The first is django-tasks-db's `DBTaskResultQuerySet.ready()` as of `now` (a job for now, or
# one due by now) and `get_locked()` (the first, locked, skipping the locked ones).
def _next_ready(
    backend_name: str, queues: list[str] | None, excluded: list[str], now: Any, date_max: Any
) -> DBTaskResult | None:
    ready = (
        _queue(backend_name, queues, excluded)
        .filter(status=TaskResultStatus.READY)
        .filter(Q(run_after=date_max) | Q(run_after__lte=now))
        .select_for_update(skip_locked=True)[:1]
    )
    return next(iter(ready), None)


def _first_due(
    backend_name: str, queues: list[str] | None, excluded: list[str], date_max: Any
) -> datetime | None:
    return (
        _queue(backend_name, queues, excluded)
        .filter(status=TaskResultStatus.READY)
        .exclude(run_after=date_max)
        .order_by("run_after")
        .values_list("run_after", flat=True)
        .first()
    )


class WakingWorker(db_worker.Worker):
    """`db_worker.Worker`'s loop, with its sleep replaced by a `Wakeup` and its jobs run on up to
    `threads` threads at once."""

    def __init__(self, *, wait_max: float, threads: int = 1, **options: Any) -> None:
        super().__init__(**options)
        self.wait_max = wait_max
        self.threads = threads
        self.alias = router.db_for_write(DBTaskResult)
        self.wakeup: Wakeup | None = None
        # Reentrant: the signal handler reads the count on the main thread, which may hold it.
        self._lock = threading.RLock()
        self._running = 0  # jobs on a thread now
        self._claimed = 0  # jobs claimed since the start (--max-tasks counts these)
        self.due: datetime | None = None  # when the job scheduled first is due, as last known

    def queue_of(self) -> tuple[str, list[str] | None, list[str]]:
        """What names this worker's queue: `_queue`'s arguments."""
        queues = None if self.process_all_queues else list(self.queue_names)
        return self.backend_name, queues, list(self.excluded_queue_names or [])

    def claim_next(self) -> tuple[DBTaskResult | None, bool]:
        """The next ready job, claimed for this worker (None if there is none), and whether the
        queue could be read (SQLite may be locked by a writer: then the worker tries later)."""
        with exclusive_transaction(self.alias):
            try:
                task_result = _next_ready(*self.queue_of(), timezone.now(), get_date_max())
                if task_result is not None:
                    task_result.claim(self.worker_id)
                return task_result, True
            except OperationalError as e:
                if is_locked_database_exception(e):
                    return None, False
                raise

    def idle_wait(self, wakeup: Wakeup) -> float:
        """How long to sleep with nothing ready: until the job scheduled first is due, and at
        most `wait_max` when an enqueue can wake the worker, `interval` when it cannot."""
        self.due = _first_due(*self.queue_of(), get_date_max())
        return self.wait_until_due(wakeup)

    def wait_until_due(self, wakeup: Wakeup) -> float:
        longest = self.wait_max if wakeup.listening else self.interval
        return seconds_until(self.due, timezone.now(), longest)

    def run(self) -> None:
        if self.startup_delay and self.interval:
            time.sleep(random.random())  # noqa: S311 (workers started at once look apart)
        with (
            Wakeup(self.alias, poll=self.interval) as wakeup,
            ThreadPoolExecutor(self.threads, thread_name_prefix="task") as pool,
        ):
            self.wakeup = wakeup
            logger.info(
                "Starting worker worker_id=%s queues=%s (%s, %d job%s at once)",
                self.worker_id,
                ",".join(self.queue_names),
                "woken by NOTIFY" if wakeup.listening else f"polling every {self.interval:g} s",
                self.threads,
                "" if self.threads == 1 else "s",
            )
            try:
                self._claim_while_running(wakeup, pool)
            finally:
                self.wakeup = None
                if self.busy():
                    logger.info("worker_id=%s waits for %s", self.worker_id, jobs(self.busy()))
        # the pool's exit waited for every job that was running

    def _claim_while_running(self, wakeup: Wakeup, pool: ThreadPoolExecutor) -> None:
        # Whether the queue may hold a ready job: false only once a look found none and the
        # waits since heard nothing but jobs for later (their time is noted, `due`).
        look = True
        due_known = False  # `due` holds the queue's earliest and the enqueues heard since
        while self.running:
            close_old_connections()  # dropped or expired connections, after a wait
            room = self.busy() < self.threads and not self._claims_done()
            task_result, read = (None, True)
            if room and look:
                task_result, read = self.claim_next()
                look = task_result is not None or not read
            if task_result is not None:
                self._start(pool, task_result)
                continue  # room for another, perhaps: claim before any wait
            if not self.busy():
                if self._claims_done():
                    logger.info("Ran %d tasks on %s - exiting.", self._claimed, self.worker_id)
                    return
                if self.batch and read:
                    logger.info("No more tasks to run for worker_id=%s - exiting.", self.worker_id)
                    return
            # Room and nothing ready: until a job is written or due (the queue says when, after
            # a look; a NOTIFY's payload, after a wait that heard only jobs for later). Full (or
            # done claiming): until a thread ends, which pokes the wait (wait_max: a backstop).
            if not room:
                wait = self.wait_max
            elif due_known and wakeup.listening:
                wait = self.wait_until_due(wakeup)
            else:
                wait = self.idle_wait(wakeup)
                due_known = wakeup.listening
            close_old_connections()  # back to the pool before a wait, as db_worker does
            if not self.running:
                continue
            logger.debug("worker_id=%s waits %.1f s for a job", self.worker_id, wait)
            heard = wakeup.wait(wait)
            if heard.due is not None:
                self.due = heard.due if self.due is None else min(self.due, heard.due)
            look = look or heard.job or heard.poked or heard.quiet or not wakeup.listening
            # Past the time it waited for, a job due was claimed (by this worker or another):
            # ask the queue again. So too after a wait that could not hear every enqueue.
            due_known = due_known and not heard.quiet and wakeup.listening

    def busy(self) -> int:
        with self._lock:
            return self._running

    def _claims_done(self) -> bool:
        return self.max_tasks is not None and self._claimed >= self.max_tasks

    def _start(self, pool: ThreadPoolExecutor, task_result: DBTaskResult) -> None:
        with self._lock:
            self._running += 1
            self._claimed += 1
        pool.submit(self._run_on_thread, task_result)

    def _run_on_thread(self, task_result: DBTaskResult) -> None:
        try:
            self.run_task(task_result)  # records the job's failure, whatever it raised
        except Exception:  # recording it failed too (the database went away): the log says so
            logger.exception("Task id=%s could not be recorded", task_result.id)
        finally:
            connections.close_all()  # this thread's own connections
            with self._lock:
                self._running -= 1
            wakeup = self.wakeup
            if wakeup is not None:
                wakeup.poke()  # room for another job

    def shutdown(self, signum: int, frame: FrameType | None) -> None:
        name = signal_name(signum)
        if not self.running:
            logger.warning("Received %s - exiting now; %s left.", name, jobs(self.busy()))
            self.reset_signals()
            os._exit(1)  # the running jobs' threads are not waited for: their leases run out
        self.running = False
        if not self.busy():
            logger.warning("Received %s - exiting.", name)
            sys.exit(0)
        logger.warning(
            "Received %s - finishing %s (again to exit at once)", name, jobs(self.busy())
        )
        wakeup = self.wakeup
        if wakeup is not None:
            wakeup.poke()


def jobs(count: int) -> str:
    return f"{count} running job" + ("" if count == 1 else "s")


def signal_name(signum: int) -> str:
    return signal.strsignal(signum) or str(signum)


def valid_threads(value: str) -> int:
    threads = int(value)
    if not 1 <= threads <= MAX_THREADS:
        raise ArgumentTypeError(f"must be from 1 to {MAX_THREADS}")
    return threads


def pool_sized(alias: str, threads: int) -> None:
    """A job's thread holds a connection, and a GM turn's heartbeat another: let this process's
    PostgreSQL pool open 2 per thread and one for the claims (DB_POOL_MAX_SIZE if that is more),
    so a thread never waits for a connection another thread holds."""
    pool = connections.settings[alias].get("OPTIONS", {}).get("pool")
    if not isinstance(pool, dict) or pool.get("max_size", 0) >= 2 * threads + 1:
        return
    pool["max_size"] = 2 * threads + 1
    connection = connections[alias]
    if alias in getattr(connection, "_connection_pools", {}):  # opened already (by a check)
        connection.close_pool()  # the next connection opens it again, larger


MAX_THREADS = 64


class Command(db_worker.Command):
    help = "Run a database background worker, woken by the enqueue on PostgreSQL"

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--wait-max",
            type=db_worker.valid_interval,
            default=10.0,
            help="On PostgreSQL, the longest an idle worker waits for a NOTIFY before it looks at "
            "the queue anyway (default: %(default)r); --interval is the poll elsewhere",
        )
        parser.add_argument(
            "--threads",
            type=valid_threads,
            default=1,
            help="Jobs run at once, each on a thread (default: %(default)r). A GM turn holds its "
            "job while it waits on the model: size by the turns that run at once",
        )

    def handle(self, *args: Any, wait_max: float, threads: int, **options: Any) -> None:
        pool_sized(router.db_for_write(DBTaskResult), threads)
        # db_worker's handle builds its Worker from the options: swap in ours for the call.
        original = db_worker.Worker
        db_worker.Worker = lambda **kwargs: WakingWorker(
            wait_max=wait_max, threads=threads, **kwargs
        )
        try:
            super().handle(*args, **options)
        finally:
            db_worker.Worker = original
