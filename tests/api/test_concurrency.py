"""Concurrent undo requests over HTTP against PostgreSQL: exactly one reverts."""

import pytest

from audit.models import ToolInvocation
from tests.api.conftest import campaign_url, client_for, dump, play_turn
from tests.conftest import all_at_once, build_world, postgres_only

REQUESTS = 4


@postgres_only
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
    winners = [b for b in bodies if b["reverted"]]
    assert len(winners) == 1
    assert sorted(winners[0]["reverted"]) == sorted(str(r.pk) for r in played.rows)
    for body in bodies:
        if body is not winners[0]:
            assert body["reverted"] == []
            assert {s["skip_reason"] for s in body["skipped"]} == {"already_reverted"}
    rows = ToolInvocation.objects.filter(turn=played.turn)
    assert {r.status for r in rows} == {"reverted"}
    assert len({(r.reverted_by_id, r.revert_reason) for r in rows}) == 1
    assert dump(world.campaign) == state_before
