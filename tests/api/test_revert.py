"""Revert, undo and their plans over HTTP."""

import pytest

from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch
from campaigns.services import turn_create
from tests.api.conftest import campaign_url, dump, log_dump, play_turn

pytestmark = pytest.mark.django_db


def revert_url(world, row) -> str:
    return campaign_url(world, f"invocations/{row.pk}/revert/")


def damage_then_kill(world):
    """Two turns writing the goblin's vitals: reverting the first conflicts with the second."""
    rows = []
    for delta in (-2, -5):
        turn = world.turn(world.player)
        rows.append(
            invocation_dispatch(
                campaign=world.campaign,
                actor=world.player,
                turn=turn,
                tool_name="modify_creature",
                input={"creature_id": world.goblin.pk, "hp_delta": delta},
                source=InvocationOrigin.GM,
            )
        )
    return rows


def test_revert_is_200_with_details_then_already_reverted(world, as_player, played):
    moved = dump(world.campaign)
    response = as_player.post(
        revert_url(world, played.rows[0]), {"reason": "wrong creature"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"reverted", "details"} and body["reverted"] is True
    assert body["details"]["cascaded"] == []
    assert body["details"]["state"][0]["entity"] == "creature"
    row = ToolInvocation.objects.get()
    assert (row.status, row.reverted_by, row.revert_reason) == (
        "reverted",
        world.player,
        "wrong creature",
    )
    world.hero.refresh_from_db()
    assert dump(world.campaign) != moved and (world.hero.x, world.hero.y) == (1, 1)
    again = as_player.post(revert_url(world, played.rows[0]), {}, format="json")
    assert again.status_code == 200
    assert again.json() == {"reverted": False, "skip_reason": "already_reverted"}


def test_a_failed_row_is_skipped_as_not_committed(world, as_owner):
    turn = world.turn(world.owner)
    failed = invocation_dispatch(
        campaign=world.campaign, actor=world.owner, turn=turn, tool_name="move_token", input={}
    )
    response = as_owner.post(revert_url(world, failed), {}, format="json")
    assert response.json() == {"reverted": False, "skip_reason": "not_committed"}


def test_a_later_dependent_call_is_409_with_its_id_and_nothing_changes(world, as_player):
    first, second = damage_then_kill(world)
    before, log_before = dump(world.campaign), log_dump(world.campaign)
    response = as_player.post(revert_url(world, first), {}, format="json")
    assert response.status_code == 409
    assert response.json()["conflicts"] == [str(second.pk)]
    assert response.json()["detail"]
    assert dump(world.campaign) == before
    assert log_dump(world.campaign) == log_before


def test_cascade_reverts_the_later_call_first(world, as_player):
    state_at_start = dump(world.campaign)
    first, second = damage_then_kill(world)
    response = as_player.post(revert_url(world, first), {"cascade": True}, format="json")
    assert response.status_code == 200
    assert response.json()["details"]["cascaded"] == [str(second.pk)]
    assert dump(world.campaign) == state_at_start


def test_undo_conflict_is_409_and_cascade_undoes(world, as_player):
    state_at_start = dump(world.campaign)
    first, second = damage_then_kill(world)
    url = campaign_url(world, f"turns/{first.turn_id}/undo/")
    conflict = as_player.post(url, {}, format="json")
    assert conflict.status_code == 409
    assert conflict.json()["conflicts"] == [str(second.pk)]
    done = as_player.post(url, {"cascade": True, "reason": "misread"}, format="json")
    assert done.status_code == 200
    assert done.json() == {"reverted": [str(second.pk), str(first.pk)], "skipped": []}
    assert dump(world.campaign) == state_at_start


def test_undo_reverts_newest_first_and_reports_skips(world, as_player):
    played = play_turn(world, moves=3)
    invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        turn=played.turn,
        tool_name="move_token",
        input={"creature_id": "x"},
    )
    failed = ToolInvocation.objects.get(status="failed")
    response = as_player.post(campaign_url(world, f"turns/{played.turn.pk}/undo/"), format="json")
    assert response.status_code == 200
    assert response.json() == {
        "reverted": [str(r.pk) for r in reversed(played.rows)],
        "skipped": [{"id": str(failed.pk), "skip_reason": "not_committed"}],
    }


def test_plans_show_the_work_and_change_nothing(world, as_player):
    first, second = damage_then_kill(world)
    before, log_before = dump(world.campaign), log_dump(world.campaign)
    plan = as_player.get(campaign_url(world, f"invocations/{first.pk}/revert-plan/"))
    assert plan.status_code == 200
    body = plan.json()
    assert [i["id"] for i in body["invocations"]] == [str(first.pk)]
    assert body["invocations"][0]["summary"]
    assert body["conflicts"] == [str(second.pk)]
    assert [d for d in body["diff"] if d["field"] == "hp"] == [
        {
            "entity": "creature",
            "id": str(world.goblin.pk),
            "field": "hp",
            "before": 7,
            "after": 5,
            "now": 0,
        }
    ]
    cascade = as_player.get(
        campaign_url(world, f"turns/{first.turn_id}/undo-plan/?cascade=true")
    ).json()
    assert [i["id"] for i in cascade["invocations"]] == [str(second.pk), str(first.pk)]
    assert cascade["conflicts"] == []
    assert dump(world.campaign) == before
    assert log_dump(world.campaign) == log_before


def test_a_plan_with_a_bad_cascade_value_is_400(world, as_player, played):
    response = as_player.get(
        campaign_url(world, f"turns/{played.turn.pk}/undo-plan/?cascade=maybe")
    )
    assert response.status_code == 400


def test_ids_of_another_campaign_are_404_for_revert_undo_and_plans(world, as_owner):
    elsewhere = world.foreign.campaign
    foreign_turn = turn_create(campaign=elsewhere, actor=world.outsider, message="Hello.")
    foreign = invocation_dispatch(
        campaign=elsewhere,
        actor=world.outsider,
        turn=foreign_turn,
        tool_name="set_scene",
        input={"description": "Theirs."},
    )
    requests = [
        ("post", f"invocations/{foreign.pk}/revert/"),
        ("get", f"invocations/{foreign.pk}/revert-plan/"),
        ("post", f"turns/{foreign_turn.pk}/undo/"),
        ("get", f"turns/{foreign_turn.pk}/undo-plan/"),
    ]
    for method, tail in requests:
        response = getattr(as_owner, method)(campaign_url(world, tail), format="json")
        assert response.status_code == 404, tail
        assert response.json() == {"detail": "Not found."}
    assert ToolInvocation.objects.get(pk=foreign.pk).status == "committed"
