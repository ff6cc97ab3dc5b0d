"""The embedded default (SQLite) under a real server: a long read never stalls a write (WAL),
and a write that cannot get the lock within the busy timeout answers 503, not an HTML 500. A
server whose database comes from a sqlite:// DATABASE_URL is as safe: concurrent undos of one
turn revert it once and answer 200."""

import sqlite3
from collections.abc import Iterator

import pytest
from django.db import connection, connections

from audit.models import ToolInvocation
from campaigns.models import Creature
from core.faults import RETRY_AFTER_SECONDS
from tests.conftest import World
from tests.infra.conftest import undos_at_once_revert_one_turn_once
from tests.servers import api_token, http
from tests.test_settings import settings_under

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="the embedded default's own locking (SQLite files)"
)

BUSY_TIMEOUT = 1.0  # seconds; the server is forked with it, so a blocked write gives up fast


@pytest.fixture
def short_busy_timeout() -> Iterator[None]:
    """Set before `asgi_server` forks, so the server's connections wait at most BUSY_TIMEOUT."""
    options = connections["default"].settings_dict["OPTIONS"]
    saved = options["timeout"]
    options["timeout"] = BUSY_TIMEOUT
    yield
    options["timeout"] = saved


@pytest.fixture
def other_process_db() -> Iterator[sqlite3.Connection]:
    """A second client of the same database file, as `manage.py verify_log` or a worker is."""
    raw = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, timeout=0)
    yield raw
    raw.close()


@pytest.fixture
def hit_goblin(live_world: World, asgi_server: str):
    """The owner's tool call through the server; turn and token exist before any lock is held."""
    world = live_world
    turn = world.turn(world.owner)
    url = f"{asgi_server}/api/campaigns/{world.campaign.pk}/turns/{turn.pk}/tool-calls/"
    body = {"tool": "modify_creature", "input": {"creature_id": world.goblin.pk, "hp_delta": -2}}
    token = api_token(asgi_server, world.owner.username)
    return lambda: http("POST", url, body, token, timeout=10)


def test_a_long_read_does_not_block_a_write(
    short_busy_timeout: None, live_world: World, hit_goblin, other_process_db
):
    other_process_db.execute("BEGIN")
    other_process_db.execute("SELECT count(*) FROM audit_toolinvocation").fetchone()
    try:
        status, _, body = hit_goblin()
    finally:
        other_process_db.execute("COMMIT")
    assert status == 201, body
    assert Creature.objects.get(pk=live_world.goblin.pk).hp == 5


def test_a_write_kept_waiting_past_the_busy_timeout_answers_503(
    short_busy_timeout: None, live_world: World, hit_goblin, other_process_db
):
    other_process_db.execute("BEGIN IMMEDIATE")
    try:
        status, headers, body = hit_goblin()
    finally:
        other_process_db.execute("ROLLBACK")
    assert status == 503, body
    assert headers["Content-Type"].startswith("application/json")
    assert headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert set(body) == {"detail"}
    assert not ToolInvocation.objects.exists()
    status, _, body = hit_goblin()
    assert status == 201, body  # the lock released, the same call goes through


@pytest.fixture
def database_from_a_sqlite_url() -> Iterator[None]:
    """Set before `asgi_server` forks: the server's database settings are the ones a process
    started with DATABASE_URL=sqlite:///<the test database> gets, not the embedded default's."""
    settings_dict = connections["default"].settings_dict
    from_url = settings_under(DATABASE_URL=f"sqlite:///{settings_dict['NAME']}")["database"]
    assert from_url["NAME"] == settings_dict["NAME"]
    saved = dict(settings_dict)
    connections.close_all()
    settings_dict.update({k: v for k, v in from_url.items() if k != "TEST"})
    yield
    connections.close_all()
    settings_dict.update(saved)


def test_concurrent_undos_through_a_server_on_a_sqlite_url_revert_the_turn_once(
    database_from_a_sqlite_url: None, live_world: World, asgi_server: str
):
    undos_at_once_revert_one_turn_once(live_world, asgi_server)
