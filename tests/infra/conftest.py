"""Helpers for the infrastructure tests: a tool call, the 503 an outage must give, and many
outside clients at once against a real server."""

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections

from core.faults import RETRY_AFTER_SECONDS
from tests.api.conftest import campaign_url, client_for
from tests.conftest import World


def hit_goblin(world: World):
    turn = world.turn(world.owner)
    url = campaign_url(world, f"turns/{turn.pk}/tool-calls/")
    body = {"tool": "modify_creature", "input": {"creature_id": world.goblin.pk, "hp_delta": -3}}
    return client_for(world.owner).post(url, body, format="json")


def assert_json_503(response) -> None:
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert set(response.json()) == {"detail"}


def all_at_once(*jobs: Callable[[], Any], timeout: float = 60) -> list[Any]:
    """Start every job at the same instant on its own thread; their results or exceptions.
    Threads touch the database only through the server, but close any connection they opened."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def worker(i: int, job: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            results[i] = job()
        except Exception as exc:  # collected for the assertions
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i, j)) for i, j in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), "a client never got an answer"
    return results
