"""Fixtures for the REST API: clients per role, URLs, and a turn with tool calls to revert."""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from channels.routing import get_default_application
from daphne.testing import DaphneProcess
from django.db import connections
from rest_framework.test import APIClient

from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from campaigns.models import Turn
from campaigns.selectors import campaign_state
from tests.conftest import World


def client_for(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def as_owner(world: World) -> APIClient:
    return client_for(world.owner)


@pytest.fixture
def as_player(world: World) -> APIClient:
    return client_for(world.player)


def campaign_url(world: World, tail: str = "") -> str:
    return f"/api/campaigns/{world.campaign.pk}/{tail}"


def dump(campaign: Any) -> str:
    return json.dumps(campaign_state(campaign), sort_keys=True)


def log_dump(campaign: Any) -> list[dict[str, Any]]:
    """Every column of every log row: proves a request left the log untouched."""
    return list(ToolInvocation.objects.filter(campaign=campaign).order_by("sequence").values())


@dataclass
class PlayedTurn:
    turn: Turn
    rows: list[ToolInvocation]


def play_turn(world: World, actor: Any = None, moves: int = 1) -> PlayedTurn:
    """A turn of `actor` (the player by default) with `moves` committed move_token calls."""
    actor = actor or world.player
    turn = world.turn(actor)
    rows = [
        invocation_dispatch(
            campaign=world.campaign,
            actor=actor,
            turn=turn,
            tool_name="move_token",
            input={"creature_id": world.hero.pk, "x": 2 + i, "y": 3},
        )
        for i in range(moves)
    ]
    assert all(r.status == ToolInvocation.Status.COMMITTED for r in rows)
    return PlayedTurn(turn, rows)


@pytest.fixture
def played(world: World) -> PlayedTurn:
    return play_turn(world)


@pytest.fixture
def api_server(transactional_db, settings) -> Iterator[str]:
    """The app in a real Daphne on a free localhost port (the pattern of tests/browser): what an
    outside client talks to, through real sockets and the ASGI stack. Forked after the test
    database exists, so it needs a database other processes can open (PostgreSQL)."""
    settings.GM_PROVIDER = "scripted"
    connections.close_all()  # the child must not share this process's database sockets
    process = DaphneProcess(host="127.0.0.1", get_application=get_default_application)
    process.start()
    try:
        if not process.ready.wait(timeout=30):
            error = "" if process.errors.empty() else process.errors.get_nowait()[1]
            raise RuntimeError(f"Daphne did not start.\n{error}")
        yield f"http://127.0.0.1:{process.port.value}"
    finally:
        process.terminate()
        process.join(timeout=10)
