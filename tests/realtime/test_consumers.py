"""The campaign feed: who may listen, and that every published event reaches them in order."""

import pytest
from channels.db import database_sync_to_async

from audit.models import SecurityEvent
from audit.services import invocation_dispatch, turn_undo
from campaigns.models import Campaign, Membership
from tests.realtime.conftest import (
    FOREIGN_ORIGIN,
    ORIGIN,
    browser,
    damage_goblin,
    open_socket,
    play_and_undo,
    receive_until,
    session_cookie,
    token_header,
)
from web.consumers import REFUSED

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_member_receives_events_in_seq_order_with_their_source(world):
    socket = await browser(world.campaign.pk, world.player)
    turn = await play_and_undo(world)
    events = await receive_until(socket, "interaction_reverted")
    await socket.disconnect()

    assert [e["type"] for e in events] == [
        "message_created",
        "state_changed",
        "interaction_reverted",
    ]
    assert [e["source"] for e in events] == ["user", "ai_tool_execution", "system"]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert {e["campaign"] for e in events} == {str(world.campaign.pk)}
    assert {e["turn"] for e in events} == {turn.pk}
    assert events[1]["data"] == {
        "entity": "creature",
        "id": str(world.goblin.pk),
        "facet": "vitals",
        "fields": {**events[1]["data"]["fields"], "hp": 2},
        "deleted": False,
    }


async def test_events_of_another_campaign_do_not_arrive(world):
    socket = await browser(world.campaign.pk, world.player)
    elsewhere = await database_sync_to_async(Campaign.objects.get)(name="Elsewhere")
    await database_sync_to_async(
        lambda: invocation_dispatch(
            campaign=elsewhere,
            actor=world.outsider,
            tool_name="set_scene",
            input={"description": "Somewhere else entirely."},
        )
    )()
    await play_and_undo(world)
    events = await receive_until(socket, "interaction_reverted")
    assert {e["campaign"] for e in events} == {str(world.campaign.pk)}
    assert "Somewhere else" not in str(events)
    await socket.disconnect()


async def test_non_member_is_refused_and_the_attempt_is_recorded(world):
    socket, connected, code = await open_socket(
        world.campaign.pk, [ORIGIN, await session_cookie(world.outsider)]
    )
    assert (connected, code) == (False, REFUSED)
    recorded = await database_sync_to_async(
        lambda: list(SecurityEvent.objects.values_list("kind", "user_id", "target"))
    )()
    assert recorded == [("websocket_denied", world.outsider.pk, f"ws:campaign:{world.campaign.pk}")]


async def test_anonymous_user_is_refused(world):
    _, connected, code = await open_socket(world.campaign.pk, [ORIGIN])
    assert (connected, code) == (False, REFUSED)


async def test_unknown_campaign_is_refused_like_a_foreign_one(world):
    _, connected, code = await open_socket(
        "00000000-0000-4000-8000-000000000000", [ORIGIN, await session_cookie(world.player)]
    )
    assert (connected, code) == (False, REFUSED)


async def test_foreign_origin_is_refused_even_for_a_member(world):
    _, connected, _ = await open_socket(
        world.campaign.pk, [FOREIGN_ORIGIN, await session_cookie(world.player)]
    )
    assert not connected


async def test_foreign_origin_is_refused_even_with_a_token(world):
    _, connected, _ = await open_socket(
        world.campaign.pk, [FOREIGN_ORIGIN, await token_header(world.player)]
    )
    assert not connected


async def test_session_cookie_without_origin_is_refused(world):
    """Only a client that authenticates by header may omit Origin: a cookie is a browser's."""
    _, connected, _ = await open_socket(world.campaign.pk, [await session_cookie(world.player)])
    assert not connected


async def test_token_header_authenticates_a_non_browser_client(world):
    socket, connected, _ = await open_socket(world.campaign.pk, [await token_header(world.owner)])
    assert connected
    await play_and_undo(world)
    events = await receive_until(socket, "interaction_reverted")
    assert events[-1]["source"] == "system"
    await socket.disconnect()


async def test_token_header_of_a_non_member_is_refused(world):
    _, connected, code = await open_socket(world.campaign.pk, [await token_header(world.outsider)])
    assert (connected, code) == (False, REFUSED)


async def test_bad_token_is_anonymous_even_with_a_member_session(world):
    """A client that chose token auth fails closed: the session cookie does not rescue it."""
    headers = [ORIGIN, await session_cookie(world.player), (b"authorization", b"Token nope")]
    _, connected, code = await open_socket(world.campaign.pk, headers)
    assert (connected, code) == (False, REFUSED)


async def test_undo_reaches_every_connected_member_with_the_restored_state(world):
    player_tab = await browser(world.campaign.pk, world.player)
    owner_bot, connected, _ = await open_socket(
        world.campaign.pk, [await token_header(world.owner)]
    )
    assert connected

    @database_sync_to_async
    def gm_damages_the_goblin():
        turn = world.turn(message="I attack the goblin.")
        damage_goblin(world, turn, amount=7)
        return turn

    turn = await gm_damages_the_goblin()
    for socket in (player_tab, owner_bot):
        changed = (await receive_until(socket, "state_changed"))[-1]
        assert changed["data"]["fields"]["hp"] == 0

    await database_sync_to_async(turn_undo)(
        campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner, reason="wrong target"
    )
    received = [
        (await receive_until(s, "interaction_reverted"))[-1] for s in (player_tab, owner_bot)
    ]
    assert received[0] == received[1]
    reverted = received[0]
    assert reverted["source"] == "system"
    assert reverted["data"]["turn"] == turn.pk
    assert reverted["data"]["tool_names"] == ["modify_creature"]
    assert reverted["data"]["reason"] == "wrong target"
    [restored] = reverted["data"]["state"]
    assert (restored["entity"], restored["id"]) == ("creature", str(world.goblin.pk))
    assert restored["fields"]["hp"] == world.goblin.hp == 7
    for socket in (player_tab, owner_bot):
        await socket.disconnect()


async def test_what_a_client_sends_is_ignored(world):
    socket = await browser(world.campaign.pk, world.player)
    await socket.send_to(text_data="{not json")
    await socket.send_to(text_data='{"type": "interaction_reverted", "source": "system"}')
    await play_and_undo(world)
    events = await receive_until(socket, "message_created")
    assert len(events) == 1, "nothing a client sent came back as an event"
    assert (await receive_until(socket, "interaction_reverted"))[-1]["source"] == "system"
    await socket.disconnect()


@pytest.mark.parametrize("who", ["outsider", "removed member"])
async def test_a_campaign_this_process_already_feeds_still_refuses_a_non_member(world, who):
    """A member's socket is open in this process, so the process feeds the campaign already; a
    reconnect or a second tab of someone who is not a member (never was, or was removed since:
    no service removes a member yet, so the test deletes the Membership row) is refused all the
    same, recorded, and receives nothing of what is published afterwards."""
    member = await browser(world.campaign.pk, world.owner)
    user = world.outsider if who == "outsider" else world.other
    if who == "removed member":
        await database_sync_to_async(
            Membership.objects.filter(campaign=world.campaign, user=user).delete
        )()
    refused, connected, code = await open_socket(
        world.campaign.pk, [ORIGIN, await session_cookie(user)]
    )
    assert (connected, code) == (False, REFUSED)
    recorded = await database_sync_to_async(
        lambda: list(SecurityEvent.objects.values_list("kind", "user_id", "target"))
    )()
    assert recorded == [("websocket_denied", user.pk, f"ws:campaign:{world.campaign.pk}")]
    await play_and_undo(world)
    assert (await receive_until(member, "interaction_reverted"))[-1]["type"]
    assert await refused.receive_nothing(timeout=0.5)
    await member.disconnect()
