"""`POST …/turns/{tid}/cancel/` and `…/retry/`: stop the GM on a turn, run it again on an undone
one. The turn's actor or whoever may revert; 404 for non-members, 403 + SecurityEvent for
members without the right, 409 with a plain reason for a turn in the wrong state."""

import pytest

from audit.models import SecurityEvent, ToolInvocation
from audit.services import turn_undo
from campaigns.models import ChatMessage, Turn
from gm.services import gm_turn_run, turn_cancel, turn_submit
from tests.api.conftest import campaign_url, client_for
from tests.api.test_permissions import ROLES, caller
from tests.gm.conftest import Provider, of_turn

EXPECTED = (200, 200, 200, 403, 404, 401, 200)  # actor owner cogm other outsider anon staff


def submit(world, message: str = "I attack the goblin") -> Turn:
    return turn_submit(campaign=world.campaign, actor=world.player, message=message)


def cancel(user, world, turn_id, body=None):
    url = campaign_url(world, f"turns/{turn_id}/cancel/")
    return client_for(user).post(url, body or {}, format="json")


def retry(user, world, turn_id, body=None):
    url = campaign_url(world, f"turns/{turn_id}/retry/")
    return client_for(user).post(url, body or {}, format="json")


def test_cancelling_a_queued_turn_cancels_it_at_once(
    world, events, django_capture_on_commit_callbacks, run_gm_tasks
):
    turn = submit(world)
    with django_capture_on_commit_callbacks(execute=True):
        response = cancel(world.player, world, turn.pk)

    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["status"], body["cancel_requested"]) == (turn.pk, "cancelled", True)
    assert [m["content"] for m in body["messages"]] == [
        "I attack the goblin",
        "player cancelled this turn before the GM answered it.",
    ]
    [done] = [e for e in of_turn(events, turn) if e["type"] == "gm_turn_completed"]
    assert done["source"] == "system"
    assert done["data"] == {
        "status": "cancelled",
        "model": "",
        "message": body["messages"][1]["id"],
        "content": "player cancelled this turn before the GM answered it.",
        "invocations": [],
        "error": "",
        "cancelled_by": "player",
    }
    run_gm_tasks()  # its task finds nothing to run
    assert Turn.objects.get(pk=turn.pk).status == "cancelled"
    assert not ToolInvocation.objects.exists()


def test_a_running_turn_stops_at_its_next_step_keeping_its_calls_undoable(world, events):
    turn = submit(world)
    answers, reached = [], []

    def cancelled_midway(session):
        goblin = world.goblin.pk
        first = {"creature_id": goblin, "hp_delta": -2}
        assert session.call_tool("modify_creature", first, model="m", tool_use_id="u1").ok
        answers.append(cancel(world.owner, world, turn.pk))
        session.say("The goblin staggers")
        reached.append("the next call")
        session.call_tool("modify_creature", first, model="m", tool_use_id="u2")
        reached.append("after it")

    ended = gm_turn_run(turn=turn, provider=Provider(cancelled_midway))

    [answer] = answers
    assert answer.status_code == 200
    assert (answer.json()["status"], answer.json()["cancel_requested"]) == ("running", True)
    assert reached == ["the next call"]
    assert ended.status == Turn.Status.CANCELLED
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert row.status == "committed"
    notes = list(ChatMessage.objects.filter(turn=turn).values_list("role", "content"))
    assert notes[1:] == [
        ("gm", "The goblin staggers"),
        (
            "system",
            "owner stopped the GM on this turn. Its narration above is unfinished. Its tool "
            "calls so far are in the log and can be undone.",
        ),
    ]
    assert turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player).reverted
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_cancelling_a_turn_that_ended_is_a_conflict(world, status):
    turn = submit(world)
    Turn.objects.filter(pk=turn.pk).update(status=status)
    response = cancel(world.player, world, turn.pk)
    assert response.status_code == 409
    assert response.json()["detail"] == (
        f"This turn has already ended ({status}); there is nothing left to cancel."
    )
    assert not ChatMessage.objects.filter(turn=turn, role="system").exists()


def test_cancelling_a_turn_without_the_gm_is_a_conflict(world):
    turn = world.turn(message="Just talking.")
    response = cancel(world.player, world, turn.pk)
    assert response.status_code == 409
    assert "not asked to answer" in response.json()["detail"]


def test_retrying_an_undone_gm_turn_queues_a_new_turn_with_the_same_message(
    world, run_gm_tasks, django_capture_on_commit_callbacks, events
):
    turn = submit(world)
    run_gm_tasks()
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player, reason="oops")

    with django_capture_on_commit_callbacks(execute=True):
        response = retry(world.owner, world, turn.pk)

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["retry_of"], body["actor"]) == ("queued", turn.pk, "player")
    assert [m["content"] for m in body["messages"]] == ["I attack the goblin"]
    [created] = [e for e in events if e["turn"] == body["id"]]
    assert (created["type"], created["data"]["gm"]) == ("message_created", "queued")
    run_gm_tasks()
    again = Turn.objects.get(pk=body["id"])
    assert again.status == "completed"
    assert ToolInvocation.objects.filter(turn=again, status="committed").count() == 1
    assert retry(world.owner, world, turn.pk).json()["detail"] == (
        "This turn has already been retried."
    )


def test_retrying_a_turn_that_was_not_undone_is_a_conflict(world, run_gm_tasks):
    turn = submit(world)
    run_gm_tasks()
    response = retry(world.player, world, turn.pk)
    assert response.status_code == 409
    assert response.json()["detail"] == "Only an undone turn can be retried: undo this turn first."
    assert Turn.objects.count() == 1


def test_a_turn_of_another_campaign_is_not_found(world):
    foreign = turn_submit(
        campaign=world.foreign.campaign, actor=world.outsider, message="I wander."
    )
    for act in (cancel, retry):
        assert act(world.owner, world, foreign.pk).status_code == 404
    assert Turn.objects.get(pk=foreign.pk).status == "queued"


def test_an_unknown_field_is_refused(world):
    turn = submit(world)
    assert cancel(world.player, world, turn.pk, {"force": True}).status_code == 400
    assert Turn.objects.get(pk=turn.pk).status == "queued"


@pytest.mark.parametrize("role", ROLES)
def test_who_may_cancel(world, staff, role):
    turn = submit(world)
    user = caller(world, staff, role)
    expected = EXPECTED[ROLES.index(role)]

    response = cancel(user, world, turn.pk)

    assert response.status_code == expected, response.content
    assert_denial_recorded(expected, user, world, turn)
    assert Turn.objects.get(pk=turn.pk).status == ("cancelled" if expected == 200 else "queued")


@pytest.mark.parametrize("role", ROLES)
def test_who_may_retry(world, staff, role, run_gm_tasks):
    turn = submit(world)
    run_gm_tasks()
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner)
    user = caller(world, staff, role)
    expected = EXPECTED[ROLES.index(role)]

    response = retry(user, world, turn.pk)

    assert response.status_code == expected, response.content
    assert_denial_recorded(expected, user, world, turn)
    assert Turn.objects.filter(retry_of=turn).exists() == (expected == 200)


def assert_denial_recorded(expected: int, user, world, turn: Turn) -> None:
    events = list(SecurityEvent.objects.values_list("kind", "user", "campaign", "target"))
    if expected == 403:
        assert events == [("revert_denied", user.pk, world.campaign.pk, f"turn:{turn.pk}")]
    else:
        assert events == []


def test_cancel_of_a_queued_turn_by_the_service_is_the_same_as_over_http(world):
    turn = submit(world)
    cancelled = turn_cancel(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.cogm)
    assert (cancelled.status, cancelled.cancel_requested_by) == ("cancelled", world.cogm)
