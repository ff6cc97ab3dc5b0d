"""Turns in the admin: their messages and tool calls, and "Undo turn" through `turn_undo`."""

import pytest
from django.urls import reverse

from audit.models import ToolInvocation
from campaigns.models import ChatMessage, Turn
from tests.admin.conftest import call, change_url, messages_of, move
from tests.conftest import dump


def turn_url(turn):
    return reverse("admin:campaigns_turn_change", args=[turn.pk])


def undo_url(turn):
    return reverse("admin:campaigns_turn_undo", args=[turn.pk])


@pytest.fixture
def played(world):
    """A turn with two committed calls and one that failed on invalid input."""
    before = dump(world.campaign)
    turn = world.turn(message="I smash the goblin and run.")
    hit = call(
        world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -3}, turn=turn
    )
    step = move(world, 6, turn=turn)
    failed = call(world, "consume_resource", {"creature_id": world.hero.pk}, turn=turn)
    return turn, before, (hit, step, failed)


def test_turn_page_shows_its_messages_and_invocations(staff_client, played):
    turn, _, (hit, step, failed) = played
    response = staff_client.get(turn_url(turn))
    html = response.content.decode()
    assert response.status_code == 200
    assert "I smash the goblin and run." in html
    for row in (hit, step, failed):
        assert f'<a href="{change_url(row)}">#{row.sequence} {row.tool_name}</a>' in html
    assert "HP -3" in html and ">critical</span>" in html
    assert f'href="{undo_url(turn)}"' in html
    assert 'name="_save"' not in html


def test_undo_page_shows_the_plan_including_what_will_be_skipped(staff_client, played):
    turn, _, (hit, step, failed) = played
    response = staff_client.get(undo_url(turn))
    assert response.status_code == 200
    plan = response.context["plan"]["invocations"]
    assert [(p["id"], p["skip_reason"]) for p in plan] == [
        (str(step.pk), None),
        (str(hit.pk), None),
        (str(failed.pk), "not_committed"),
    ]
    assert plan[2]["summary"] == "consume_resource"  # invalid input: named, not described


def test_undo_turn_restores_state_marks_the_turn_and_tells_the_table(
    staff_client, staff, played, world, events, django_capture_on_commit_callbacks
):
    turn, before, (hit, step, failed) = played
    events.clear()
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(undo_url(turn), {"reason": "the goblin was already dead"})
    assert response.status_code == 302 and response.url == turn_url(turn)
    assert dump(world.campaign) == before
    turn.refresh_from_db()
    assert (turn.reverted_by, turn.revert_reason) == (staff, "the goblin was already dead")
    assert not ChatMessage.objects.filter(turn=turn, reverted=False).exists()
    status = dict(ToolInvocation.objects.values_list("pk", "status"))
    assert [status[r.pk] for r in (hit, step, failed)] == ["reverted", "reverted", "failed"]
    assert [(e["type"], e["source"], e["turn"]) for e in events] == [
        ("interaction_reverted", "system", turn.pk)
    ]
    assert events[0]["data"]["invocations"] == [str(step.pk), str(hit.pk)]
    assert messages_of(response) == [
        ("success", f"Turn {turn.pk} by player undone: 2 invocation(s) reverted."),
        (
            "info",
            f'<a href="{change_url(failed)}">#3 consume_resource</a>: skipped, it never '
            "committed, so there is nothing to revert (not_committed).",
        ),
    ]
    assert f'href="{undo_url(turn)}"' not in staff_client.get(turn_url(turn)).content.decode()


def test_undo_blocked_by_a_later_turn_names_it_and_offers_cascade(staff_client, played, world):
    turn, before, _ = played
    later = move(world, 8, turn=world.turn())
    response = staff_client.post(undo_url(turn), {"reason": "oops"})
    assert response.status_code == 200
    ((level, text),) = messages_of(response)
    assert level == "error" and f"{change_url(later)}" in text
    assert f"{undo_url(turn)}?cascade=1" in text
    assert Turn.objects.get(pk=turn.pk).reverted_at is None
    staff_client.post(undo_url(turn), {"reason": "oops", "cascade": "on"})
    assert dump(world.campaign) == before


def test_turns_are_read_only(staff_client, client, played, world):
    turn, _, _ = played
    client.force_login(type(world.owner).objects.create_superuser("root", "root@example.com", "pw"))
    assert client.get(reverse("admin:campaigns_turn_add")).status_code == 403
    assert client.post(turn_url(turn), {"status": "failed"}).status_code == 403
    delete = reverse("admin:campaigns_turn_delete", args=[turn.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert Turn.objects.get(pk=turn.pk).status == turn.status


def test_turn_list_filters_by_campaign(staff_client, played, world):
    turn, _, _ = played
    elsewhere = world.foreign.campaign
    other = Turn.objects.create(campaign=elsewhere, actor=world.outsider)
    changelist = reverse("admin:campaigns_turn_changelist")
    response = staff_client.get(changelist, {"campaign": str(elsewhere.pk)})
    assert [t.pk for t in response.context["cl"].result_list] == [other.pk]
    assert {t.pk for t in staff_client.get(changelist).context["cl"].result_list} == {
        turn.pk,
        other.pk,
    }


def test_turn_status_filter_offers_every_status(staff_client, played):
    turn, _, _ = played
    changelist = reverse("admin:campaigns_turn_changelist")
    assert _status_choices(staff_client.get(changelist)) == [
        "open",
        "queued",
        "running",
        "awaiting_approval",
        "completed",
        "failed",
        "cancelled",
    ]
    same = staff_client.get(changelist, {"status__exact": turn.status})
    assert [t.pk for t in same.context["cl"].result_list] == [turn.pk]
    other = "failed" if turn.status != "failed" else "completed"
    assert (
        list(staff_client.get(changelist, {"status__exact": other}).context["cl"].result_list) == []
    )


def _status_choices(response):
    spec = next(f for f in response.context["cl"].filter_specs if f.title == "status")
    return [value for value, _ in spec.lookup_choices]
