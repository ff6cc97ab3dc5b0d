"""POST /api/campaigns/{id}/turns/ queues the turn for the GM (run_gm defaults to true) and
answers at once; a worker runs the GM on it."""

from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from audit.models import ToolInvocation
from campaigns.models import Turn
from gm.models import GMRound


def post_turn(world, message: str, **extra):
    client = APIClient()
    client.force_authenticate(world.player)
    url = f"/api/campaigns/{world.campaign.pk}/turns/"
    return client.post(url, {"message": message, **extra}, format="json")


def test_posting_a_turn_queues_it_and_answers_before_the_gm_runs(
    world, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_turn(world, "I attack the goblin")

    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["attempts"], body["retry_of"]) == ("queued", 0, None)
    assert [m["role"] for m in body["messages"]] == ["player"]
    assert not ToolInvocation.objects.exists() and not GMRound.objects.exists()
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7
    [created] = events  # every client can say "the GM is thinking" at once
    assert created["type"] == "message_created"
    assert (created["data"]["role"], created["data"]["gm"]) == ("player", "queued")


def test_a_worker_then_runs_the_gm_on_the_queued_turn(world, events, run_gm_tasks):
    body = post_turn(world, "I attack the goblin").json()

    assert run_gm_tasks() == [f"turn {body['id']} completed"]

    turn = Turn.objects.get(pk=body["id"])
    assert (turn.status, turn.attempts, turn.lease_owner) == ("completed", 1, "")
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert (row.tool_name, row.status, row.model) == ("modify_creature", "committed", "scripted/1")
    assert row.tool_use_id == "scripted-1"
    world.goblin.refresh_from_db()
    assert world.goblin.hp < 7
    listed = APIClient()
    listed.force_authenticate(world.player)
    [shown] = listed.get(f"/api/campaigns/{world.campaign.pk}/turns/").json()["results"]
    assert shown["status"] == "completed"
    assert [m["role"] for m in shown["messages"]] == ["player", "gm"]
    assert "Thorin strikes Goblin" in shown["messages"][1]["content"]
    types = [e["type"] for e in events]
    assert types[0] == "gm_turn_started" and types[-1] == "gm_turn_completed"
    assert events[0]["data"] == {"actor": "player", "model": "scripted/1", "attempt": 1}


def test_run_gm_false_leaves_the_turn_open_for_later(world, run_gm_tasks):
    response = post_turn(world, "I attack the goblin", run_gm=False)
    assert response.json()["status"] == Turn.Status.OPEN
    assert run_gm_tasks() == []
    assert not ToolInvocation.objects.exists()
    assert Turn.objects.get().status == Turn.Status.OPEN


def test_a_failing_gm_fails_the_turn_with_a_system_message(world, settings, run_gm_tasks):
    settings.GM_PROVIDER = "anthropic"
    settings.ANTHROPIC_API_KEY = ""
    response = post_turn(world, "Hello?")
    assert response.status_code == 201 and response.json()["status"] == "queued"

    run_gm_tasks()

    turn = Turn.objects.get(pk=response.json()["id"])
    assert turn.status == Turn.Status.FAILED
    note = turn.messages.get(role="system").content
    assert "ANTHROPIC_API_KEY" in note


def test_the_posted_turns_answer_is_the_turn_as_listed(world):
    """The answer is the turn as the list reads it (`turn_list`): the same as the turn listed
    afterwards, built from the rows just written: the turn in hand, no call yet, and its opening
    message read back, one statement."""
    with CaptureQueriesContext(connection) as queries:
        response = post_turn(world, "I attack the goblin")
    assert response.status_code == 201
    body = response.json()
    # its opening message alone (the service hands back the turn); the campaign's oldest held
    # call (what a queued turn waits for) is read, as it must be
    read_back = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith('SELECT "campaigns_turn".')
        or q["sql"].startswith('SELECT "campaigns_chatmessage".')
        or '"audit_toolinvocation"."turn_id" IN (' in q["sql"]
    ]
    assert len(read_back) == 1, read_back
    listed = APIClient()
    listed.force_authenticate(world.player)
    [shown] = listed.get(f"/api/campaigns/{world.campaign.pk}/turns/").json()["results"]
    assert body == shown
