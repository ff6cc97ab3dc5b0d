"""A failed tool call with malformed input is still drawn in the feed, by its tool's name."""

from django.test import Client

from audit.services import invocation_dispatch
from tests.conftest import World


def test_turn_with_a_malformed_failed_call_renders(world: World, player_client: Client):
    turn = world.turn(message="I attack the goblin")
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        tool_name="modify_creature",
        input={"hp_delta": "lots"},
        turn=turn,
    )
    assert row.status == "failed"
    response = player_client.get(f"/campaigns/{world.campaign.pk}/")
    assert response.status_code == 200
    assert "modify_creature" in response.content.decode()
