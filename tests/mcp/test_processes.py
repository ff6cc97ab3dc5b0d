"""Two web processes behind a load balancer without sticky sessions: one client's consecutive
requests alternate between them, in both protocol eras, and the agent's work holds together
(one turn, its undo) because no MCP state lives in a process (docs/mcp.md#many-processes)."""

import pytest

from campaigns.models import Turn
from tests.conftest import dump
from tests.mcp.client import RoundRobin, mcp_client, mcp_url
from tests.mcp.conftest import run

pytestmark = pytest.mark.django_db(transaction=True)


def port(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_one_clients_requests_alternate_between_two_processes(
    asgi_server, asgi_server_b, live_world, token, mode
):
    before = dump(live_world.campaign)
    balancer = RoundRobin([port(asgi_server), port(asgi_server_b)])
    hero = live_world.hero.pk

    async def work():
        url = mcp_url(asgi_server, live_world.campaign.pk)
        async with mcp_client(url, token("player"), mode=mode, transport=balancer) as client:
            tools = await client.list_tools()
            begun = await client.call_tool("begin_turn", {"message": "Two hosts."})
            turn = begun.structured_content["turn"]
            calls = [
                await client.call_tool("move_token", {"creature_id": hero, "x": x, "y": 9})
                for x in (1, 2, 3)
            ]
            undone = await client.call_tool("undo_turn", {"turn_id": turn})
            return tools, turn, calls, undone

    tools, turn, calls, undone = run(work)
    assert len(tools.tools) == 22
    assert {c.structured_content["turn"] for c in calls} == {turn}
    assert all(c.structured_content["status"] == "committed" for c in calls)
    assert undone.is_error is False and len(undone.structured_content["reverted"]) == 3
    assert Turn.objects.filter(campaign=live_world.campaign, actor=live_world.player).count() == 1
    assert dump(live_world.campaign) == before
    # Every POST alternated: no two consecutive requests reached the same process.
    posts = [p for p, method in balancer.sent if method == "POST"]
    assert len(posts) >= 6
    assert all(a != b for a, b in zip(balancer.sent, balancer.sent[1:], strict=False))
    assert set(posts) == {port(asgi_server), port(asgi_server_b)}
