"""The connection pool caps a process's PostgreSQL sessions; a request that finds every
connection busy waits at most DB_POOL_TIMEOUT and then answers 503 with Retry-After."""

import threading
from collections.abc import Iterator

import pytest
from django.db import connection, connections

from tests.api.conftest import campaign_url, client_for
from tests.conftest import build_world, postgres_only
from tests.infra.conftest import assert_json_503, pool_rebuilt

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]

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
