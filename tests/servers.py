"""Real server and worker processes for the tests that need them (browser, load, races through
HTTP, workers killed mid-turn).

pytest-django's `live_server` speaks WSGI only, and the table needs websockets, so the app runs
in Daphne, forked by Channels' `DaphneProcess` after the test database exists (the child
inherits the settings that point at it). GM turns run in task workers: `gm_workers` starts
`manage.py task_worker` processes on the test database, as the Procfile's `worker:` runs them.
Loaded as a plugin by tests/conftest.py; the processes themselves are started by
tests/processes.py, which the benchmarks share.
"""

from collections.abc import Callable, Iterator

import pytest

from tests.conftest import World, build_world
from tests.processes import (
    SERVER_APPLICATION_NAME,
    Feed,
    WorkerProcess,
    api_token,
    daphne_server,
    http,
    worker_start,
)

__all__ = ["SERVER_APPLICATION_NAME", "Feed", "WorkerProcess", "api_token", "http"]


@pytest.fixture
def asgi_server(transactional_db) -> Iterator[str]:
    """The whole app (HTTP, websockets, static files) on a free localhost port. GM turns
    posted to it are queued: a test that wants them answered starts a worker (`gm_worker`)."""
    with daphne_server() as url:
        yield url


@pytest.fixture
def asgi_server_b(asgi_server) -> Iterator[str]:
    """A second server on the same database, as a second instance behind a load balancer."""
    with daphne_server() as url:
        yield url


@pytest.fixture
def live_world(transactional_db) -> World:
    """The shared world, committed, so the server process sees it."""
    return build_world()


@pytest.fixture
def gm_workers(transactional_db, tmp_path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start task worker processes (`manage.py task_worker`) on the test database: `start(delay=
    seconds the scripted GM waits per round, lease=GM_LEASE_SECONDS, attempts=GM_MAX_ATTEMPTS,
    threads=jobs at once, wait_max=its longest idle wait, **more settings)`. They run the
    scripted GM and publish through Redis: events reach other processes' websockets. Every
    worker is stopped after the test."""
    started: list[WorkerProcess] = []

    def start(
        delay: float = 0,
        lease: float = 60,
        attempts: int = 3,
        threads: int = 1,
        wait_max: float = 10,
        **more: str,
    ) -> WorkerProcess:
        name = f"test-worker-{len(started) + 1}"
        settings = {"GM_SCRIPTED_DELAY": str(delay), "GM_LEASE_SECONDS": str(lease)}
        settings["GM_MAX_ATTEMPTS"] = str(attempts)
        log = tmp_path / f"{name}.log"
        started.append(
            worker_start(name, log, threads=threads, wait_max=wait_max, **settings, **more)
        )
        return started[-1]

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def gm_worker(gm_workers) -> WorkerProcess:
    """One worker process answering turns at once with the scripted GM: for the tests that
    post turns to a live server and wait for the GM's answer."""
    return gm_workers()
