"""The task worker's idle wait (`manage.py task_worker`, `gm.wakeup`): woken on PostgreSQL by the
NOTIFY a job's row sends when its transaction commits, not by polling; a job scheduled for later
is run when it is due however long the worker would wait; a listening connection that dies is
replaced, and the worker polls meanwhile."""

import time
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult, get_date_max

from campaigns.models import Turn
from gm import wakeup as wakeup_module
from gm.management.commands import task_worker
from gm.management.commands.task_worker import WakingWorker
from gm.services import turn_submit
from gm.tasks import run_turn
from gm.wakeup import Heard, Wakeup
from tests.conftest import World
from tests.processes import worker_start

DEADLINE = 45.0  # seconds: a condition not met by then fails the test
NEVER = 600.0  # a wait no test lasts: a worker that waits it was not woken


def worker(**options) -> WakingWorker:
    defaults = {
        "queue_names": ["*"],
        "interval": 0.5,
        "batch": False,
        "backend_name": "default",
        "startup_delay": False,
        "max_tasks": None,
        "worker_id": "test-waking-worker",
        "excluded_queue_names": [],
        "wait_max": NEVER,
    }
    return WakingWorker(**{**defaults, **options})


class Deaf:
    """A `Wakeup` that hears nothing (while it cannot listen)."""

    listening = False


class Listening:
    listening = True


def test_an_idle_worker_waits_until_the_job_scheduled_first_is_due(db):
    soon = timezone.now() + timedelta(seconds=5)
    run_turn.using(run_after=soon + timedelta(seconds=60)).enqueue(1)
    run_turn.using(run_after=soon).enqueue(2)
    waits = worker()

    assert 4 < waits.idle_wait(Listening()) <= 5
    assert waits.idle_wait(Deaf()) == 0.5  # not listening: the poll, sooner than the job

    DBTaskResult.objects.all().update(run_after=timezone.now() - timedelta(seconds=1))
    assert waits.idle_wait(Listening()) == 0  # overdue (ready): no wait at all


def test_an_idle_worker_with_nothing_scheduled_waits_its_longest(db):
    run_turn.enqueue(1)  # ready now: the claim takes it, the wait does not count it
    assert worker().idle_wait(Listening()) == NEVER
    assert worker(interval=2).idle_wait(Deaf()) == 2


def test_a_job_wakes_a_listener_when_its_transaction_commits(transactional_db):
    with Wakeup("default", poll=0.1) as wakeup:
        assert wakeup.listening
        assert wakeup.wait(0.2).quiet  # nothing written

        with transaction.atomic():
            run_turn.enqueue(1)
            assert wakeup.wait(0.2).quiet  # not before it commits: the row is not there yet
        assert wakeup.wait(DEADLINE) == Heard(job=True)
        assert wakeup.wait(0.2).quiet  # one wake for one job


def test_a_job_for_later_wakes_a_listener_with_the_time_it_is_due(transactional_db):
    soon = timezone.now() + timedelta(seconds=30)
    with Wakeup("default", poll=0.1) as wakeup:
        with transaction.atomic():  # delivered together, at its commit
            run_turn.using(run_after=soon + timedelta(seconds=5)).enqueue(1)
            run_turn.using(run_after=soon).enqueue(2)
        assert wakeup.wait(DEADLINE) == Heard(due=soon)  # the earlier of the two; no job now

        with transaction.atomic():
            run_turn.using(run_after=soon).enqueue(3)
            run_turn.enqueue(4)  # heard together: a job to run now, and one for later
        assert wakeup.wait(DEADLINE) == Heard(job=True, due=soon)


def test_a_listener_whose_connection_died_listens_again(transactional_db):
    with Wakeup("default", poll=0.1) as wakeup:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE query = 'LISTEN task_enqueued' AND datname = current_database()"
            )
        assert wakeup.wait(0.2).quiet
        assert not wakeup.listening  # dropped: the worker polls meanwhile

        assert wakeup.wait(0.1).quiet  # listens again (and hears nothing yet)
        assert wakeup.listening
        run_turn.enqueue(1)
        assert wakeup.wait(DEADLINE).job


def test_a_worker_that_cannot_listen_polls(db, monkeypatch):
    slept: list[float] = []

    def select(readers, writers, errors, timeout):
        slept.append(timeout)
        return [], [], []

    monkeypatch.setattr(wakeup_module.select, "select", select)
    with Wakeup("default", poll=0.05) as wakeup:
        wakeup._drop()
        wakeup.retry_at = time.monotonic() + NEVER  # the server refuses it for now
        assert not wakeup.listening
        assert wakeup.wait(NEVER).quiet
    assert slept == [0.05]  # the poll, not the wait it was asked


def test_an_idle_worker_process_runs_a_turn_when_it_is_enqueued(live_world: World, tmp_path):
    log = tmp_path / "worker.log"
    process = worker_start("waking", log, interval=NEVER, wait_max=NEVER, verbosity=2)
    try:
        deadline = time.monotonic() + DEADLINE
        while "waits" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "waits" in log.read_text(), log.read_text()  # idle, for NEVER seconds

        turn = turn_submit(campaign=live_world.campaign, actor=live_world.player, message="hi")

        while Turn.objects.get(pk=turn.pk).status != "completed":
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.02)
    finally:
        process.stop()
    assert "woken by NOTIFY" in log.read_text()


def test_the_start_line_says_how_the_worker_waits(transactional_db, caplog):
    with caplog.at_level("INFO", logger="django_tasks_db"):
        worker(batch=True).run()  # nothing queued: it starts, looks once and ends
    assert "woken by NOTIFY" in caplog.text


class Scripted:
    """A listening wait that hears what it is given, one `Heard` per wait; then the worker
    stops."""

    listening = True

    def __init__(self, waker: WakingWorker, heard: list[Heard]) -> None:
        self.waker, self.heard, self.waits = waker, heard, []

    def wait(self, seconds: float) -> Heard:
        self.waits.append(seconds)
        if not self.heard:
            self.waker.running = False
            return Heard()
        return self.heard.pop(0)


def test_a_worker_that_heard_only_jobs_for_later_does_not_look_at_the_queue(db, monkeypatch):
    """Every worker hears every enqueue: a turn's watchdog, written with its claim, would
    send them all to the queue for a job that is not due. They note its time instead."""
    waker = worker()
    monkeypatch.setattr(task_worker, "close_old_connections", lambda: None)  # the test's own
    looks, asked = [], []
    monkeypatch.setattr(waker, "claim_next", lambda: looks.append(1) or None)
    queue_due = waker.idle_wait

    def idle_wait(wakeup):
        asked.append(1)
        return queue_due(wakeup)

    monkeypatch.setattr(waker, "idle_wait", idle_wait)
    later, sooner = (timezone.now() + timedelta(seconds=s) for s in (300, 100))
    heard = [Heard(due=later), Heard(due=sooner), Heard(job=True), Heard(poked=True), Heard()]
    wakeup = Scripted(waker, heard)

    waker._claim_while_running(wakeup, pool=None)

    # a look at the start, none for the jobs for later, one each after a job, a poke, a timeout
    assert len(looks) == 4
    assert len(asked) == 2  # the queue's earliest: at the start, and after the time ran out
    first, after_later, after_sooner, *_ = wakeup.waits
    assert first == NEVER  # nothing scheduled in the queue
    assert 290 < after_later <= 300 and 90 < after_sooner <= 100  # till the earliest heard


def test_a_claim_takes_the_first_due_job_of_its_queue_and_marks_it_running(db):
    def job(priority=0, queue="default", backend="default", later=False):
        return DBTaskResult.objects.create(
            args_kwargs={"args": [priority], "kwargs": {}},
            priority=priority,
            task_path="gm.tasks.run_turn",
            queue_name=queue,
            backend_name=backend,
            run_after=timezone.now() + timedelta(hours=1) if later else get_date_max(),
        )

    first, second = job(priority=5), job(priority=5)
    job(priority=1)
    elsewhere = job(priority=9, queue="other")
    job(priority=9, later=True), job(priority=9, backend="b")
    serving = worker(queue_names=["default", "spare"])

    claimed = serving.claim_next()

    assert claimed.pk == first.pk
    assert (claimed.status, claimed.worker_ids) == ("RUNNING", [serving.worker_id])
    assert claimed.started_at is not None and claimed.args_kwargs == first.args_kwargs
    stored = DBTaskResult.objects.get(pk=first.pk)
    assert (stored.status, stored.worker_ids) == ("RUNNING", [serving.worker_id])
    assert serving.claim_next().pk == second.pk
    assert worker(excluded_queue_names=["default"]).claim_next().pk == elsewhere.pk
    assert worker(queue_names=["spare"]).claim_next() is None
