"""Races through a real server: a table's worth of clicks at once never answers 5xx and never
reverts twice."""

from functools import partial

from audit.models import ToolInvocation
from tests.conftest import World, all_at_once
from tests.infra.conftest import undos_at_once_revert_one_turn_once
from tests.servers import api_token, http


def test_twelve_concurrent_undos_of_one_turn_revert_it_once(live_world: World, asgi_server: str):
    undos_at_once_revert_one_turn_once(live_world, asgi_server)


CALLS = 8


def test_valid_and_invalid_calls_at_once_never_collide_on_the_log(
    live_world: World, asgi_server: str
):
    """Failed rows take the campaign lock like committed ones: both draw their sequence number
    from one chain, so a burst of good and bad calls leaves distinct, gapless numbers."""
    world = live_world
    turn = world.turn(world.owner)
    url = f"{asgi_server}/api/campaigns/{world.campaign.pk}/turns/{turn.pk}/tool-calls/"
    token = api_token(asgi_server, world.owner.username)
    valid = {"tool": "move_token", "input": {"creature_id": world.goblin.pk, "x": 3, "y": 4}}
    invalid = {"tool": "move_token", "input": {"creature_id": world.goblin.pk, "x": "far"}}
    calls = [partial(http, "POST", url, (valid, invalid)[i % 2], token) for i in range(2 * CALLS)]

    answers = all_at_once(*calls)

    assert sorted(a[0] for a in answers) == [201] * CALLS + [422] * CALLS, answers
    rows = ToolInvocation.objects.filter(campaign=world.campaign)
    assert sorted(rows.values_list("sequence", flat=True)) == list(range(1, 2 * CALLS + 1))
    assert rows.filter(status="committed").count() == CALLS
    assert rows.filter(status="failed").count() == CALLS
