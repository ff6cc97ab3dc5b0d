"""`manage.py task_worker`: django-tasks-db's worker (`db_worker`, every option of it), woken by
the enqueue (PostgreSQL's NOTIFY, `gm.wakeup`) instead of polling the queue. The Procfile's
`worker:` runs it.

It runs up to `--threads` jobs at once, each on a thread of its own: a GM turn holds its job for
its whole stream, mostly waiting on the model, so one process carries several turns (a process
per turn would cost ~180 MB each). The main thread claims a job whenever fewer than that many
run, and sleeps otherwise, until a thread ends (it pokes the wait), a job is written or one is
due. Each thread's database connections are its own and are closed when its job ends; the
leases a turn is run under are per turn (`gm.lease`), whatever thread holds them.

SIGTERM or SIGINT stops the claims, lets the running jobs end, then exits; a second signal exits
at once, and the turns it held resume elsewhere when their leases run out, as after a crash.
"""

import functools
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
from django.utils import timezone
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult, get_date_max

from gm import rows
from gm.wakeup import Wakeup, seconds_until

logger = logging.getLogger("django_tasks_db")


def _claim(
    backend_name: str, queues: list[str] | None, excluded: list[str], worker_id: str
) -> DBTaskResult | None:
    """django-tasks-db's `ready().get_locked()` and the job's `claim()`: the first job of the
    worker's queue (its backend's jobs in the queues it serves, None: every queue) due now, in
    the queue's order and skipping the locked ones, marked running for `worker_id`; or None."""
    now = timezone.now()
    appended = rows.prep(DBTaskResult, "worker_ids", [worker_id])
    params = [TaskResultStatus.RUNNING, now, appended]
    params += [*_queue_params(backend_name, queues, excluded), TaskResultStatus.READY]
    params += [get_date_max(), now]
    # Raw SQL: UPDATE … RETURNING, which the ORM cannot say; as querysets the look (rebuilt at
    # every look, a worker's most frequent statement) and the claim are two statements.
    found = rows.fetch_one(_claim_sql(_shape(queues, excluded)), params)
    return None if found is None else rows.instance(DBTaskResult, found)


def _first_due(backend_name: str, queues: list[str] | None, excluded: list[str]) -> Any:
    """When the job scheduled first for later is due, or None."""
    params = [*_queue_params(backend_name, queues, excluded), TaskResultStatus.READY]
    # Plain SQL: a worker's look before each idle wait, with `_claim`'s queue.
    found = rows.fetch_one(_first_due_sql(_shape(queues, excluded)), [*params, get_date_max()])
    return None if found is None else found[0]


def _queue_params(backend_name: str, queues: list[str] | None, excluded: list[str]) -> list[str]:
    return [backend_name, *(queues or []), *excluded]


def _shape(queues: list[str] | None, excluded: list[str]) -> tuple[int | None, int]:
    return (None if queues is None else len(queues), len(excluded))


def _queue_sql(shape: tuple[int | None, int]) -> str:
    """The condition of a worker's queue (`_queue_params`) and READY, for a queue of this
    `shape` (how many queues it serves, None: every one; how many it leaves out)."""
    served, excluded = shape
    c = functools.partial(rows.column, DBTaskResult)
    where = f"{c('backend_name')} = %s"
    if served is not None:
        where += f" AND {c('queue_name')} IN ({', '.join(['%s'] * served) or 'NULL'})"
    if excluded:
        where += f" AND NOT ({c('queue_name')} IN ({', '.join(['%s'] * excluded)}))"
    return f"{where} AND {c('status')} = %s"


@functools.cache
def _claim_sql(shape: tuple[int | None, int]) -> str:
    c, t = functools.partial(rows.column, DBTaskResult), rows.table(DBTaskResult)
    run_after = c("run_after")
    ready = f"{_queue_sql(shape)} AND ({run_after} = %s OR {run_after} <= %s)"
    order = f"{c('priority')} DESC, {run_after} ASC, {c('enqueued_at')} ASC"
    return (
        f"UPDATE {t} AS job SET {c('status')} = %s, {c('started_at')} = %s, "
        f"{c('worker_ids')} = job.{c('worker_ids')} || %s WHERE job.{c('pk')} = "
        f"(SELECT {c('pk')} FROM {t} WHERE {ready} ORDER BY {order} "
        f"LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING {rows.columns(DBTaskResult, 'job')}"
    )


@functools.cache
def _first_due_sql(shape: tuple[int | None, int]) -> str:
    run_after = rows.column(DBTaskResult, "run_after")
    return (
        f"SELECT {run_after} FROM {rows.table(DBTaskResult)} WHERE {_queue_sql(shape)} "
        f"AND NOT ({run_after} = %s) ORDER BY {run_after} ASC LIMIT 1"
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
        """What names this worker's queue: its backend, the queues it serves (None: every
        queue) and those it leaves out."""
        queues = None if self.process_all_queues else list(self.queue_names)
        return self.backend_name, queues, list(self.excluded_queue_names or [])

    def claim_next(self) -> DBTaskResult | None:
        """The next ready job, claimed for this worker (None if there is none)."""
        return _claim(*self.queue_of(), self.worker_id)

    def idle_wait(self, wakeup: Wakeup) -> float:
        """How long to sleep with nothing ready: until the job scheduled first is due, and at
        most `wait_max` when an enqueue can wake the worker, `interval` when it cannot."""
        self.due = _first_due(*self.queue_of())
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
            task_result = None
            if room and look:
                task_result = self.claim_next()
                look = task_result is not None
            if task_result is not None:
                self._start(pool, task_result)
                continue  # room for another, perhaps: claim before any wait
            if not self.busy():
                if self._claims_done():
                    logger.info("Ran %d tasks on %s - exiting.", self._claimed, self.worker_id)
                    return
                if self.batch:
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
    connections[alias].close_pool()  # if a check opened it: the next connection opens it larger


MAX_THREADS = 64


class Command(db_worker.Command):
    help = "Run a database background worker, woken by the enqueue"

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--wait-max",
            type=db_worker.valid_interval,
            default=10.0,
            help="The longest an idle worker waits for a NOTIFY before it looks at the queue "
            "anyway (default: %(default)r); --interval is the poll while it cannot listen",
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
