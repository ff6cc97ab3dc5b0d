"""Provenance on the campaign page: a call the owner made into a player's turn says so."""

import pytest
from django.test import Client

from audit.services import invocation_dispatch
from tests.conftest import World

pytestmark = pytest.mark.django_db


def move_call(world: World, turn, requested_by):
    """An agent's move of the player's own token, posted by `requested_by`."""
    return invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        turn=turn,
        tool_name="move_token",
        input={"creature_id": world.hero.pk, "x": 3, "y": 3},
        requested_by=requested_by,
    )


def test_a_call_the_owner_made_into_a_players_turn_reads_by_owner_for_player(
    world: World, player_client: Client
):
    turn = world.turn(world.player, "I look around.")
    move_call(world, turn, requested_by=world.owner)
    fragment = player_client.get(
        f"/campaigns/{world.campaign.pk}/feed/", {"turn": turn.pk}
    ).content.decode()
    assert '<span class="provenance">by owner for player</span>' in fragment
    page = player_client.get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert '<span class="provenance">by owner for player</span>' in page


def test_a_call_the_actor_made_carries_no_provenance_note(world: World, player_client: Client):
    turn = world.turn(world.player, "I look around.")
    move_call(world, turn, requested_by=world.player)
    fragment = player_client.get(
        f"/campaigns/{world.campaign.pk}/feed/", {"turn": turn.pk}
    ).content.decode()
    assert "Thorin moves" in fragment and "provenance" not in fragment
