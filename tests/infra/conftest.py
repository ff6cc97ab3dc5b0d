"""Helpers for the infrastructure tests: a tool call, the 503 an outage must give, and many
outside clients at once against a real server (a table's undo clicks); a connection pool of
another shape."""

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from django.db import connection, connections

from core.faults import RETRY_AFTER_SECONDS
from tests.api.conftest import assert_undone_exactly_once, campaign_url, client_for, dump, play_turn
from tests.conftest import World, all_at_once
from tests.processes import api_token, http


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


UNDOS = 12


def undos_at_once_revert_one_turn_once(world: World, base_url: str) -> None:
    """A table's worth of undo clicks on one played turn, all at once, by three members through
    the server at `base_url`: every click answers 200, one reverted the turn, every other one
    found it already reverted."""
    state_before = dump(world.campaign)
    played = play_turn(world, moves=3)
    url = f"{base_url}/api/campaigns/{world.campaign.pk}/turns/{played.turn.pk}/undo/"
    tokens = [api_token(base_url, u.username) for u in (world.player, world.owner, world.cogm)]
    undo = [
        partial(http, "POST", url, {"reason": f"click {i}"}, tokens[i % len(tokens)])
        for i in range(UNDOS)
    ]

    answers = all_at_once(*undo)

    assert [a[0] for a in answers] == [200] * UNDOS, answers
    assert_undone_exactly_once([body for _, _, body in answers], world, played, state_before)
