"""POST /api/campaigns/{id}/turns/ runs the configured GM (run_gm defaults to true)."""

from rest_framework.test import APIClient

from audit.models import ToolInvocation
from campaigns.models import Turn


def post_turn(world, message: str, **extra):
    client = APIClient()
    client.force_authenticate(world.player)
    url = f"/api/campaigns/{world.campaign.pk}/turns/"
    return client.post(url, {"message": message, **extra}, format="json")


def test_posting_a_turn_runs_the_gm_on_it(world, events, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_turn(world, "I attack the goblin")

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "completed"
    assert [m["role"] for m in body["messages"]] == ["player", "gm"]
    assert "Thorin strikes Goblin" in body["messages"][1]["content"]
    [summary] = body["invocations"]
    assert (summary["tool_name"], summary["status"]) == ("modify_creature", "committed")
    assert ToolInvocation.objects.get(pk=summary["id"]).model == "scripted/1"
    world.goblin.refresh_from_db()
    assert world.goblin.hp < 7
    assert [e["type"] for e in events][-1] == "gm_turn_completed"


def test_run_gm_false_leaves_the_turn_open_for_later(world):
    response = post_turn(world, "I attack the goblin", run_gm=False)
    assert response.json()["status"] == Turn.Status.OPEN
    assert not ToolInvocation.objects.exists()


def test_a_failing_gm_still_answers_201_with_the_failed_turn(world, settings):
    settings.GM_PROVIDER = "anthropic"
    settings.ANTHROPIC_API_KEY = ""
    response = post_turn(world, "Hello?")
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "failed"
    assert body["messages"][-1]["role"] == "system"
    assert "ANTHROPIC_API_KEY" in body["messages"][-1]["content"]
