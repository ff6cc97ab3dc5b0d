"""Fixtures for the REST API: clients per role, URLs, and a turn with tool calls to revert."""

from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from campaigns.models import Turn
from tests.conftest import World, dump


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


def assert_undone_exactly_once(
    bodies: list[dict[str, Any]], world: World, played: PlayedTurn, state_before: str
) -> None:
    """Concurrent undos of one turn: one answer reverted every call, the others skipped them all
    as already reverted, the rows carry one revert, and the world is as before the turn."""
    winners = [b for b in bodies if b["reverted"]]
    assert len(winners) == 1, bodies
    assert sorted(winners[0]["reverted"]) == sorted(str(r.pk) for r in played.rows)
    for body in bodies:
        if body is not winners[0]:
            assert body["reverted"] == []
            assert {s["skip_reason"] for s in body["skipped"]} == {"already_reverted"}
    rows = ToolInvocation.objects.filter(turn=played.turn)
    assert {r.status for r in rows} == {"reverted"}
    assert len({(r.reverted_by_id, r.revert_reason) for r in rows}) == 1
    assert dump(world.campaign) == state_before
