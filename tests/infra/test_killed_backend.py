"""PostgreSQL kills the backend in the middle of a tool call (a failover, an operator's
pg_terminate_backend): the client gets a JSON 503 it may retry, the log blames no tool, and the
next request works on a fresh connection. PostgreSQL ending every session of an idle server (a
restart) costs it no request: the first one after it is answered, on a fresh connection."""

import time
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from ai_tools import registry
from audit.models import ToolInvocation
from campaigns.models import Creature
from tests.conftest import World, build_world
from tests.infra.conftest import assert_json_503, hit_goblin, pool_rebuilt
from tests.infra.faults import terminate_backends
from tests.servers import SERVER_APPLICATION_NAME, api_token, http

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_backend_killed_inside_a_tool_call_is_a_503_and_no_failed_row(monkeypatch):
    world = build_world()
    tool = registry.write_tool("modify_creature")
    apply = tool.apply
    killed: list[int] = []

    def apply_then_lose_the_backend(ctx, data):
        result = apply(ctx, data)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            killed.append(cursor.fetchone()[0])
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return result

    monkeypatch.setattr(tool, "apply", apply_then_lose_the_backend)
    response = hit_goblin(world)
    monkeypatch.undo()

    assert killed, "the backend must have been killed mid-call"
    assert_json_503(response)
    assert not ToolInvocation.objects.exists()
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7

    retried = hit_goblin(world)
    assert retried.status_code == 201, retried.content
    assert Creature.objects.get(pk=world.goblin.pk).hp == 4


# A process's pool after a burst: grown to max_size, it gives back one idle connection per
# max_idle (10 minutes), so an idle server holds every one of them when PostgreSQL restarts.
@pytest.fixture
def full_server_pool() -> Iterator[int]:
    """Set before `asgi_server` forks: the server's pool holds its configured max_size."""
    configured = connection.settings_dict["OPTIONS"]["pool"]
    with pool_rebuilt({**configured, "min_size": configured["max_size"]}):
        yield configured["max_size"]


def server_sessions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = %s",
            [SERVER_APPLICATION_NAME],
        )
        return cursor.fetchone()[0]


RECOVERY = 2.0  # seconds: the most a restart may keep an idle server from answering


def test_an_idle_server_answers_at_once_after_postgresql_ends_its_sessions(
    full_server_pool: int, live_world: World, asgi_server: str
):
    url = f"{asgi_server}/api/campaigns/"
    token = api_token(asgi_server, live_world.player.username)
    assert http("GET", url, token=token)[0] == 200
    deadline = time.monotonic() + 30
    while server_sessions() < full_server_pool and time.monotonic() < deadline:
        time.sleep(0.05)  # the pool fills in the background after its first checkout

    assert terminate_backends(SERVER_APPLICATION_NAME) == full_server_pool

    answers: list[Any] = []
    deadline = time.monotonic() + RECOVERY
    while 200 not in answers and (left := deadline - time.monotonic()) > 0:
        try:
            answers.append(http("GET", url, token=token, timeout=left)[0])
        except (TimeoutError, urllib.error.URLError) as error:
            answers.append(repr(error))
    assert 200 in answers[:2], answers
