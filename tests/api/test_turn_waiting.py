"""Turns queued behind a held call say so (docs/api.md#paths, a turn's `waiting`): what they
wait for, on whom and since when, in the API and in the page's words."""

from datetime import timedelta

import pytest

from audit.services.approval import invocation_reject
from audit.services.revert import turn_undo
from campaigns.models import Turn
from tests.api.conftest import campaign_url
from tests.conftest import held_hit, signed_in

Q, PAUSED = Turn.Status.QUEUED, Turn.Status.AWAITING_APPROVAL


@pytest.fixture
def table(world):
    """A turn answered, then the player's turn paused on the GM's held hit, and two turns queued
    behind it (the GM answers a campaign's turns in order)."""
    done = world.turn(world.other, "I look around.")
    Turn.objects.filter(pk=done.pk).update(status=Turn.Status.COMPLETED)
    row = held_hit(world, world.player)
    Turn.objects.filter(pk=row.turn_id).update(status=PAUSED)
    queued = [world.turn(world.other, "I open the door."), world.turn(world.owner, "Roll it.")]
    Turn.objects.filter(pk__in=[t.pk for t in queued]).update(status=Q)
    return done, row, queued


def waiting_by_turn(client, world) -> dict[int, dict | None]:
    turns = client.get(campaign_url(world, "turns/")).json()["results"]
    return {t["id"]: t["waiting"] for t in turns}


def test_the_paused_turn_and_those_queued_behind_it_say_what_they_wait_for(world, table, as_player):
    done, row, queued = table
    expected = {
        "for": "approval",
        "invocation": str(row.pk),
        "tool_name": "modify_creature",
        "turn": row.turn_id,
        "on": ["owner", "cogm"],  # the approvers: the owner and the co-GM, not its own player
        "since": row.created_at.isoformat().replace("+00:00", "Z"),
        "expires_at": (row.created_at + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
    }
    assert waiting_by_turn(as_player, world) == {
        done.pk: None,
        row.turn_id: expected,
        queued[0].pk: expected,
        queued[1].pk: expected,
    }


def test_the_page_says_waiting_for_approval_instead_of_thinking(world, table):
    _, row, queued = table
    html = signed_in(world.other).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert html.count("<strong>Waiting for approval</strong>") == 3
    assert "The GM is thinking" not in html
    assert (
        "the GM’s modify creature call made in an earlier turn waits for owner or cogm to "
        "answer it, since"
    ) in html
    assert "the GM’s modify creature call in this turn waits for owner or cogm" in html


def test_once_answered_nothing_waits(world, table, as_player):
    _, row, _ = table
    invocation_reject(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    assert set(waiting_by_turn(as_player, world).values()) == {None}
    html = signed_in(world.other).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert "Waiting for approval" not in html and "The GM is thinking" in html


def test_an_undone_paused_turn_holds_nothing_up(world, table, as_player):
    _, row, queued = table
    turn_undo(campaign_id=world.campaign.pk, turn_id=row.turn_id, user=world.owner)
    assert set(waiting_by_turn(as_player, world).values()) == {None}


def test_a_page_of_turns_reads_the_held_call_once(
    world, table, as_player, django_assert_max_num_queries
):
    as_player.get(campaign_url(world, "turns/"))  # warm the session and the user
    with django_assert_max_num_queries(12) as ctx:
        as_player.get(campaign_url(world, "turns/"))
    held_reads = [q for q in ctx.captured_queries if "awaiting_approval" in q["sql"]]
    assert len(held_reads) == 1


def test_the_turn_that_made_the_call_waits_from_the_moment_it_is_held(world, table, as_player):
    """Between the call being held and the runner pausing the turn, the turn is still
    `running`: it already waits for the answer."""
    _, row, queued = table
    Turn.objects.filter(pk=row.turn_id).update(status=Turn.Status.RUNNING)
    waiting = waiting_by_turn(as_player, world)
    assert waiting[row.turn_id]["invocation"] == str(row.pk)
    assert all(waiting[t.pk]["invocation"] == str(row.pk) for t in queued)


def test_an_agents_held_call_in_an_open_turn_holds_nobody_up(world, table, as_player):
    """Only a GM turn running or paused on its call holds the campaign's place."""
    _, row, _ = table
    Turn.objects.filter(pk=row.turn_id).update(status=Turn.Status.OPEN)
    assert set(waiting_by_turn(as_player, world).values()) == {None}
