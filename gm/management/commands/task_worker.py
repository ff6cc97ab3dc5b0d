"""`manage.py task_worker`: django-tasks-db's worker (`db_worker`, every option of it), woken by
the enqueue on PostgreSQL instead of polling the queue (`gm.wakeup`); on other databases it polls
every `--interval` seconds, as `db_worker` does. The Procfile's `worker:` runs it."""

import logging
import random
import time
from argparse import ArgumentParser
from typing import Any

from django.db import close_old_connections, router
from django.db.models import Min
from django.db.utils import OperationalError
from django.utils import timezone
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult, get_date_max
from django_tasks_db.utils import exclusive_transaction, is_locked_database_exception

from gm.wakeup import Wakeup, seconds_until

logger = logging.getLogger("django_tasks_db")


class WakingWorker(db_worker.Worker):
    """`db_worker.Worker`'s loop, with its sleep replaced by a `Wakeup`."""

    def __init__(self, *, wait_max: float, **options: Any) -> None:
        super().__init__(**options)
        self.wait_max = wait_max
        self.alias = router.db_for_write(DBTaskResult)

    def queue(self) -> Any:
        tasks = DBTaskResult.objects.using(self.alias).filter(backend_name=self.backend_name)
        if not self.process_all_queues:
            tasks = tasks.filter(queue_name__in=self.queue_names)
        if self.excluded_queue_names:
            tasks = tasks.exclude(queue_name__in=self.excluded_queue_names)
        return tasks

    def claim_next(self) -> tuple[DBTaskResult | None, bool]:
        """The next ready job, claimed for this worker (None if there is none), and whether the
        queue could be read (SQLite may be locked by a writer: then the worker tries later)."""
        tasks = self.queue().ready()
        with exclusive_transaction(tasks.db):
            try:
                task_result = tasks.get_locked()
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
        longest = self.wait_max if wakeup.listening else self.interval
        scheduled = self.queue().filter(status=TaskResultStatus.READY)
        scheduled = scheduled.exclude(run_after=get_date_max())
        due = scheduled.aggregate(due=Min("run_after"))["due"]
        return seconds_until(due, timezone.now(), longest)

    def run(self) -> None:
        if self.startup_delay and self.interval:
            time.sleep(random.random())  # noqa: S311 (workers started at once look apart)
        with Wakeup(self.alias, poll=self.interval) as wakeup:
            logger.info(
                "Starting worker worker_id=%s queues=%s (%s)",
                self.worker_id,
                ",".join(self.queue_names),
                "woken by NOTIFY" if wakeup.listening else f"polling every {self.interval:g} s",
            )
            while self.running:
                close_old_connections()  # dropped or expired connections, after a wait
                task_result, read = self.claim_next()
                if task_result is not None:
                    self.run_task(task_result)
                elif self.batch and read:
                    logger.info("No more tasks to run for worker_id=%s - exiting.", self.worker_id)
                    return
                if self.max_tasks is not None and self._run_tasks >= self.max_tasks:
                    logger.info("Ran %d tasks on %s - exiting.", self._run_tasks, self.worker_id)
                    return
                wait = self.idle_wait(wakeup) if self.running and task_result is None else None
                close_old_connections()  # back to the pool before a wait, as db_worker does
                if wait is not None:
                    logger.debug("worker_id=%s waits %.1f s for a job", self.worker_id, wait)
                    wakeup.wait(wait)


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

    def handle(self, *args: Any, wait_max: float, **options: Any) -> None:
        # db_worker's handle builds its Worker from the options: swap in ours for the call.
        original = db_worker.Worker
        db_worker.Worker = lambda **kwargs: WakingWorker(wait_max=wait_max, **kwargs)
        try:
            super().handle(*args, **options)
        finally:
            db_worker.Worker = original
