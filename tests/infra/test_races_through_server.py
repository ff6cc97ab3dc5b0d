"""Races through a real server, on whichever engine the suite runs (the embedded SQLite default
included): a table's worth of clicks at once never answers 5xx and never reverts twice."""

from functools import partial

from audit.models import ToolInvocation
from tests.api.conftest import dump, play_turn
from tests.conftest import World
from tests.infra.conftest import all_at_once
from tests.servers import api_token, http

UNDOS = 12


def test_twelve_concurrent_undos_of_one_turn_revert_it_once(live_world: World, asgi_server: str):
    world = live_world
    state_before = dump(world.campaign)
    played = play_turn(world, moves=3)
    url = f"{asgi_server}/api/campaigns/{world.campaign.pk}/turns/{played.turn.pk}/undo/"
    tokens = [api_token(asgi_server, u.username) for u in (world.player, world.owner, world.cogm)]
    undo = [
        partial(http, "POST", url, {"reason": f"click {i}"}, tokens[i % len(tokens)])
        for i in range(UNDOS)
    ]

    answers = all_at_once(*undo)

    assert [a[0] for a in answers] == [200] * UNDOS, answers
    bodies = [body for _, _, body in answers]
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
