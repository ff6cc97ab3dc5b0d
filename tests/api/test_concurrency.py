"""Concurrent undo requests over HTTP against PostgreSQL: exactly one reverts."""

import pytest

from tests.api.conftest import assert_undone_exactly_once, campaign_url, client_for, dump, play_turn
from tests.conftest import all_at_once, build_world

REQUESTS = 4


@pytest.mark.django_db(transaction=True)
def test_concurrent_undos_of_one_turn_revert_it_exactly_once():
    world = build_world()
    state_before = dump(world.campaign)
    played = play_turn(world, moves=3)
    url = campaign_url(world, f"turns/{played.turn.pk}/undo/")
    callers = [world.player, world.owner, world.cogm, world.player][:REQUESTS]

    def undo(i: int):
        return client_for(callers[i]).post(url, {"reason": f"request {i}"}, format="json")

    responses = all_at_once(*[lambda i=i: undo(i) for i in range(REQUESTS)])
    assert [r.status_code for r in responses] == [200] * REQUESTS
    bodies = [r.json() for r in responses]
    assert_undone_exactly_once(bodies, world, played, state_before)
