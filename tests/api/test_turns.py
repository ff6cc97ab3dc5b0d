"""Turns over HTTP: a player's message opens a turn; the list shows messages and tool calls."""

import pytest

from campaigns.models import ChatMessage, Turn
from tests.api.conftest import campaign_url, client_for, play_turn

pytestmark = pytest.mark.django_db


def test_posting_a_message_opens_a_turn_of_the_caller(
    world, as_player, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = as_player.post(
            campaign_url(world, "turns/"),
            {"message": "I search the altar.", "run_gm": False},
            format="json",
        )
    assert response.status_code == 201
    body = response.json()
    assert body["actor"] == "player" and body["status"] == "open"
    assert [m["content"] for m in body["messages"]] == ["I search the altar."]
    assert body["invocations"] == []
    turn = Turn.objects.get(pk=body["id"])
    assert turn.actor == world.player
    assert ChatMessage.objects.get(turn=turn).source == ChatMessage.Source.USER
    assert [e["type"] for e in events] == ["message_created"]


def test_the_list_is_newest_first_with_messages_and_invocation_summaries(world, as_owner):
    first = play_turn(world, moves=2)
    second = play_turn(world, actor=world.owner, moves=1)
    response = as_owner.get(campaign_url(world, "turns/"))
    assert response.status_code == 200
    results = response.json()["results"]
    assert [t["id"] for t in results] == [second.turn.pk, first.turn.pk]
    assert [i["id"] for i in results[1]["invocations"]] == [str(r.pk) for r in first.rows]
    assert results[1]["invocations"][0] == {
        "id": str(first.rows[0].pk),
        "sequence": first.rows[0].sequence,
        "tool_name": "move_token",
        "tool_tier": "low",
        "status": "committed",
    }
    assert results[1]["messages"][0]["author"] == "player"


def test_staff_may_read_turns_but_only_members_post_them(world, staff):
    client = client_for(staff)
    assert client.get(campaign_url(world, "turns/")).status_code == 200
    response = client.post(campaign_url(world, "turns/"), {"message": "Hi"}, format="json")
    assert response.status_code == 403
    assert not Turn.objects.filter(actor=staff).exists()


def test_a_non_member_gets_404_for_turns(world):
    client = client_for(world.outsider)
    assert client.get(campaign_url(world, "turns/")).status_code == 404
    response = client.post(campaign_url(world, "turns/"), {"message": "Hi"}, format="json")
    assert response.status_code == 404
    assert not Turn.objects.exists()
