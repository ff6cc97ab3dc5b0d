"""A small load through a real Daphne on PostgreSQL: concurrent clients get no 5xx, and the
server's database sessions stay within its connection pool, during the load and after it."""

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from django.db import connection

from audit.models import ToolInvocation
from tests.conftest import World
from tests.servers import SERVER_APPLICATION_NAME, api_token, http

CLIENTS = 16
REQUESTS = 96
COUNT_SERVER_SESSIONS = (
    "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND application_name = %s"
)


class SessionCounter:
    """Counts the server's PostgreSQL sessions on a connection of its own, again and again
    until stopped, and keeps the highest count seen."""

    def __init__(self) -> None:
        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        self.db = psycopg.connect(**params, autocommit=True)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch)

    def now(self) -> int:
        return self.db.execute(COUNT_SERVER_SESSIONS, [SERVER_APPLICATION_NAME]).fetchone()[0]

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.now())

    def __enter__(self) -> "SessionCounter":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.fixture
def session_counter() -> Iterator[SessionCounter]:
    counter = SessionCounter()
    yield counter
    counter.db.close()


def test_concurrent_clients_get_no_5xx_and_sessions_stay_within_the_pool(
    live_world: World, asgi_server: str, session_counter: SessionCounter
):
    world = live_world
    pool_size = connection.settings_dict["OPTIONS"]["pool"]["max_size"]
    assert pool_size < CLIENTS, "the load must outnumber the pool, or waiting is never tested"
    turn = world.turn(world.owner)
    api = f"{asgi_server}/api/campaigns/{world.campaign.pk}/"
    users = (world.owner, world.player, world.cogm, world.other)
    tokens = {u.username: api_token(asgi_server, u.username) for u in users}
    owner = tokens[world.owner.username]
    reads = [
        (api + "state/", tokens[world.player.username]),
        (api + "invocations/", tokens[world.other.username]),
        (api, tokens[world.cogm.username]),
    ]
    call_url = api + f"turns/{turn.pk}/tool-calls/"

    def send(i: int) -> int:
        """Every fourth request a tool call (a write under the campaign lock), else a read."""
        if i % 4 == 3:
            move = {"tool": "move_token", "input": {"creature_id": world.goblin.pk, "x": i, "y": 1}}
            return http("POST", call_url, move, owner)[0]
        url, token = reads[i % 4]
        return http("GET", url, None, token)[0]

    with session_counter, ThreadPoolExecutor(max_workers=CLIENTS) as clients:
        statuses = list(clients.map(send, range(REQUESTS)))

    assert [s for s in statuses if s >= 500] == []
    assert set(statuses) <= {200, 201}, statuses
    assert 0 < session_counter.peak <= pool_size
    assert session_counter.now() <= pool_size
    assert ToolInvocation.objects.filter(status="committed").count() == statuses.count(201)
