"""The connection pool caps a process's PostgreSQL sessions; a request that finds every
connection busy waits at most DB_POOL_TIMEOUT and then answers 503 with Retry-After. After
PostgreSQL ended every pooled session (a restart), the next checkout gets a live connection at
once, and the pool holds no dead one."""

import threading
from collections.abc import Iterator

import pytest
from django.db import connection, connections

from tests.api.conftest import campaign_url, client_for
from tests.conftest import build_world
from tests.infra.conftest import assert_json_503, pool_rebuilt
from tests.infra.faults import terminate_backends

pytestmark = pytest.mark.django_db(transaction=True)

POOL = {"min_size": 1, "max_size": 2, "timeout": 0.5}


@pytest.fixture
def small_pool() -> Iterator[None]:
    """A pool of two, rebuilt from these options on first use, and the configured one after."""
    with pool_rebuilt(POOL):
        yield


def test_a_request_finding_the_pool_exhausted_answers_503(small_pool: None):
    world = build_world()
    connections.close_all()  # give the test's connection back: the pool is all free
    held = [connection.pool.getconn() for _ in range(POOL["max_size"])]
    answers: list = []

    def request() -> None:
        try:
            answers.append(client_for(world.player).get(campaign_url(world, "state/")))
        finally:
            connections.close_all()

    try:
        worker = threading.Thread(target=request)
        worker.start()
        worker.join(timeout=30)
    finally:
        for conn in held:
            connection.pool.putconn(conn)
    [response] = answers
    assert_json_503(response)
    assert client_for(world.player).get(campaign_url(world, "state/")).status_code == 200


POOL_APPLICATION_NAME = "undoable-gm-test-pool"
RECOVERY = 2.0  # seconds: the most a restart may keep a checkout waiting


def test_a_checkout_after_postgresql_ended_every_pooled_session_gets_a_live_connection():
    """The configured pool, full (as a burst leaves it), with a timeout of RECOVERY: the
    checkout after a restart must not wait out the pool's backoff over each dead connection."""
    configured = connection.settings_dict["OPTIONS"]["pool"]
    size = configured["max_size"]
    full = {**configured, "min_size": size, "timeout": RECOVERY}
    with pool_rebuilt(full, application_name=POOL_APPLICATION_NAME):
        connection.pool.open(wait=True)
        assert terminate_backends(POOL_APPLICATION_NAME) == size

        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            assert cursor.fetchone() == (1,)
        connections.close_all()

        held = [connection.pool.getconn() for _ in range(size)]
        try:
            assert [c.execute("SELECT 1").fetchone() for c in held] == [(1,)] * size
        finally:
            for conn in held:
                connection.pool.putconn(conn)
