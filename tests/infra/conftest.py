"""Helpers for the infrastructure tests: a tool call, the 503 an outage must give, and many
outside clients at once against a real server; a connection pool of another shape."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, connections

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


@contextmanager
def pool_rebuilt(pool: dict[str, Any], **options: Any) -> Iterator[None]:
    """PostgreSQL's connection pool rebuilt from `pool` (and the connection `options`, e.g. an
    application_name) on its next use, in this process and in a server forked meanwhile; the
    configured one after."""
    saved = connection.settings_dict["OPTIONS"]
    connections.close_all()
    connection.close_pool()
    connection.settings_dict["OPTIONS"] = {**saved, **options, "pool": pool}
    try:
        yield
    finally:
        connections.close_all()
        connection.close_pool()
        connection.settings_dict["OPTIONS"] = saved
