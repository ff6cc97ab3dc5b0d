"""The events under fog (issue 21, point 3): the publisher works out once per event what
players may see, and each socket gets the texts for its viewer's sight, decided at connect. A
change to a creature the fog hides reaches a player's socket as a placeholder with the same
`seq` (its data empty), so the player's page sees no gap and refetches the board; a restored
state or a held call names it to the GM only. A foe that steps out of the fog is announced in
full; one that steps into it vanishes without its new position reaching anyone but the GM."""

import copy
from typing import Any

import pytest
from channels.db import database_sync_to_async

from audit.models import InvocationOrigin
from audit.services import turn_undo
from campaigns import realtime
from tests.conftest import World, commit, fog_over_the_goblin, held_hit
from tests.realtime.conftest import browser, receive_until

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

INTO_THE_DARK, OUT_OF_IT, BACK_IN = (9, 9), (3, 3), (8, 8)


@database_sync_to_async
def play_in_the_fog(world: World) -> None:
    """A turn in which the GM moves the hidden goblin about (deeper in, out into a revealed
    cell, back in) and hits it there; the owner undoes the turn (the goblin back at 5,5, in
    the dark); then a hit on it waits for approval."""
    turn = world.turn(world.player, "I sneak ahead.")
    for x, y in (INTO_THE_DARK, OUT_OF_IT, BACK_IN):
        data = {"creature_id": world.goblin.pk, "x": x, "y": y}
        commit(world, "move_token", data, turn=turn, source=InvocationOrigin.GM)
    data = {"creature_id": world.goblin.pk, "hp_delta": -2}
    commit(world, "modify_creature", data, turn=turn, source=InvocationOrigin.GM)
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner)
    held_hit(world, world.player)


def as_a_player_sees_it(world: World, event: dict[str, Any]) -> dict[str, Any]:
    """The GM's event as the test expects a player to get it."""
    seen = copy.deepcopy(event)
    data, goblin = seen["data"], str(world.goblin.pk)
    fields = data.get("fields") or {}
    if seen["type"] == "state_changed" and data["id"] == goblin:
        seen["data"] = data if (fields.get("x"), fields.get("y")) == OUT_OF_IT else {}
    if seen["type"] == "interaction_reverted":
        data["state"] = [s for s in data["state"] if s["id"] != goblin]
    if seen["type"] == "approval_requested":
        data.update(input={}, summary="", preview=[])
    return seen


async def test_a_player_socket_gets_placeholders_for_what_the_fog_hides(world: World):
    await database_sync_to_async(fog_over_the_goblin)(world)
    gm = await browser(world.campaign.pk, world.owner)
    players = [await browser(world.campaign.pk, user) for user in (world.player, world.other)]
    await play_in_the_fog(world)
    seen_by_gm = await receive_until(gm, "approval_requested")
    seen_by_players = [await receive_until(p, "approval_requested") for p in players]
    for socket in (gm, *players):  # and nothing more arrives
        assert await socket.receive_nothing(timeout=0.2)
        await socket.disconnect()

    types = [e["type"] for e in seen_by_gm]
    assert types == [
        "message_created",
        *["state_changed"] * 4,
        "interaction_reverted",
        "message_created",
        "approval_requested",
    ]
    assert [e["data"]["fields"] for e in seen_by_gm[1:4]] == [
        {"x": x, "y": y} for x, y in (INTO_THE_DARK, OUT_OF_IT, BACK_IN)
    ]
    assert {s["id"] for s in seen_by_gm[5]["data"]["state"]} == {str(world.goblin.pk)}
    expected = [as_a_player_sees_it(world, e) for e in seen_by_gm]
    assert seen_by_players == [expected, expected]
    seqs = [e["seq"] for e in expected]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # no gap: no resync


async def test_without_fog_in_play_players_get_the_events_the_gm_gets(world: World):
    gm = await browser(world.campaign.pk, world.owner)
    player = await browser(world.campaign.pk, world.player)
    await database_sync_to_async(commit)(
        world, "move_token", {"creature_id": world.goblin.pk, "x": 9, "y": 9}
    )
    [moved] = await receive_until(gm, "state_changed")
    seen = await receive_until(player, "state_changed")
    for socket in (gm, player):
        await socket.disconnect()
    assert seen == [moved] and moved["data"]["fields"] == {"x": 9, "y": 9}


async def test_what_players_see_is_worked_out_once_per_broadcast_not_per_socket(
    world: World, monkeypatch
):
    await database_sync_to_async(fog_over_the_goblin)(world)
    projections = []
    project = realtime.player_envelopes

    def counted(*args: Any, **kwargs: Any) -> Any:
        projections.append(args)
        return project(*args, **kwargs)

    monkeypatch.setattr(realtime, "player_envelopes", counted)
    sockets = [
        await browser(world.campaign.pk, user) for user in (world.owner, world.player, world.other)
    ]
    await database_sync_to_async(commit)(
        world, "move_token", {"creature_id": world.goblin.pk, "x": 9, "y": 9}
    )
    received = [(await receive_until(socket, "state_changed"))[-1] for socket in sockets]
    for socket in sockets:
        await socket.disconnect()
    assert [e["data"].get("fields") for e in received] == [{"x": 9, "y": 9}, None, None]
    assert len(projections) == 1  # three sockets, two of them players': one projection
