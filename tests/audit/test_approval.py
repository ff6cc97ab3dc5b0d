"""Human in the loop: a held call waits with a preview and changes nothing; approved it runs
through the dispatch as a new row at the log's tip; rejected or expired it changes nothing;
a stale preview is refused with a fresh one; undo withdraws what still waits. Every status
change is a chained transition, so the chain verifies throughout."""

from datetime import timedelta

import pytest
from django_tasks_db.models import DBTaskResult

from audit.analytics import tool_stats
from audit.chain import verify
from audit.models import InvocationOrigin, StatusTransition, ToolInvocation
from audit.services import turn_undo
from audit.services.approval import invocation_approve, invocation_reject
from campaigns.models import Campaign, Creature
from core.errors import Conflict, StalePreview
from tests.conftest import World, call, dump, run_due_tasks

Status = ToolInvocation.Status


def critical(world: World) -> Campaign:
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()
    return world.campaign


def held_hit(world: World, turn=None, hp_delta: int = -5) -> ToolInvocation:
    critical(world)
    turn = turn or world.turn()
    row = call(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": hp_delta},
        turn=turn,
        model="anthropic/claude-sonnet-4-5",
        source=InvocationOrigin.GM,
        actor=world.player,
    )
    assert row.status == Status.AWAITING_APPROVAL
    return row


def hp(creature: Creature) -> int:
    return Creature.objects.get(pk=creature.pk).hp


@pytest.fixture
def delivered(events, django_capture_on_commit_callbacks):
    """`with delivered():` — the events of what runs inside are sent (to `events`) at its end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_a_held_call_waits_with_a_preview_and_changes_nothing(world, events, delivered):
    before = dump(world.campaign)
    with delivered():
        row = held_hit(world)
    assert dump(world.campaign) == before
    assert row.preview["diff"] == [
        {"entity": "creature", "id": str(world.goblin.pk), "field": "hp", "before": 7, "after": 2}
    ]
    assert "critical" in row.preview["reason"]
    assert row.result is None and row.write_set == [] and row.committed_at is None
    (requested,) = [e for e in events if e["type"] == "approval_requested"]
    assert requested["invocation"] == str(row.pk)
    assert requested["data"]["preview"] == row.preview["diff"]
    assert requested["data"]["actor"] == world.player.username
    job = DBTaskResult.objects.get(task_path="audit.tasks.expire_held_call")
    assert job.args_kwargs["args"] == [str(row.pk)]
    assert job.run_after == row.created_at + timedelta(seconds=3600)
    assert verify(world.campaign.pk) is None


def test_a_persons_own_hand_and_lower_tiers_are_not_held(world):
    critical(world)
    hand = call(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -1},
        source=InvocationOrigin.USER,
    )
    move = call(world, "move_token", {"creature_id": world.goblin.pk, "x": 3, "y": 3})
    assert (hand.status, move.status) == (Status.COMMITTED, Status.COMMITTED)


def test_a_call_its_tool_would_refuse_fails_at_once_without_asking(world):
    critical(world)
    row = call(world, "modify_creature", {"creature_id": world.foreign.pk, "hp_delta": -1})
    assert row.status == Status.FAILED and row.preview is None


def test_approve_runs_the_call_as_a_new_row_at_the_tip(world, events, delivered):
    row = held_hit(world)
    with delivered():
        outcome = invocation_approve(
            campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
        )
    ran = outcome.ran
    row.refresh_from_db()
    assert (row.status, ran.status, ran.approval_of_id) == (
        Status.PENDING,
        Status.COMMITTED,
        row.pk,
    )
    assert ran.sequence == row.sequence + 1 and ran.user_id == world.player.pk
    assert hp(world.goblin) == 2
    link = StatusTransition.objects.get(invocation=row)
    assert (link.from_status, link.to_status, link.by_id) == (
        Status.AWAITING_APPROVAL,
        Status.PENDING,
        world.owner.pk,
    )
    resolved = [e for e in events if e["type"] == "approval_resolved"]
    assert resolved[-1]["data"]["status"] == "approved"
    assert resolved[-1]["data"]["ran_as"] == str(ran.pk)
    assert verify(world.campaign.pk) is None
    (stats,) = tool_stats(campaign_ids=[world.campaign.pk])
    assert (stats["approved"], stats["awaiting"], stats["calls"]) == (1, 0, 1)


def test_the_approved_call_is_undone_like_any_other(world):
    row = held_hit(world)
    ran = invocation_approve(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
    ).ran
    result = turn_undo(campaign_id=world.campaign.pk, turn_id=ran.turn_id, user=world.owner)
    assert result.reverted == [str(ran.pk)] and hp(world.goblin) == 7
    assert verify(world.campaign.pk) is None


def test_a_second_answer_finds_the_call_answered(world):
    row = held_hit(world)
    invocation_approve(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    with pytest.raises(Conflict):
        invocation_approve(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.cogm)
    with pytest.raises(Conflict):
        invocation_reject(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    assert ToolInvocation.objects.filter(approval_of=row).count() == 1
    assert hp(world.goblin) == 2


def test_reject_changes_nothing_and_says_why(world, events, delivered):
    row = held_hit(world)
    before = dump(world.campaign)
    with delivered():
        invocation_reject(
            campaign_id=world.campaign.pk,
            invocation_id=row.pk,
            user=world.cogm,
            reason="wrong goblin",
        )
    row.refresh_from_db()
    assert row.status == Status.REJECTED and dump(world.campaign) == before
    link = StatusTransition.objects.get(invocation=row)
    assert link.reason == "cogm rejected this call: wrong goblin"
    assert events[-1]["type"] == "approval_resolved"
    assert events[-1]["data"]["status"] == "rejected"
    assert verify(world.campaign.pk) is None


def test_a_stale_preview_is_refused_with_a_fresh_one_and_the_call_keeps_waiting(world):
    row = held_hit(world)
    call(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -1},
        source=InvocationOrigin.USER,
    )  # the owner's own hand: the goblin is at 6 now
    with pytest.raises(StalePreview) as stale:
        invocation_approve(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    assert stale.value.preview["diff"][0] | {} == {
        "entity": "creature",
        "id": str(world.goblin.pk),
        "field": "hp",
        "before": 6,
        "after": 1,
    }
    row.refresh_from_db()
    assert row.status == Status.AWAITING_APPROVAL and row.preview == stale.value.preview
    assert hp(world.goblin) == 6
    invocation_approve(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    assert hp(world.goblin) == 1
    assert verify(world.campaign.pk) is None


def test_unanswered_it_expires_by_the_task_engine(world, settings, events, delivered):
    settings.APPROVAL_TIMEOUT = 0.001  # due at once: the worker runs the scheduled job now
    row = held_hit(world)
    before = dump(world.campaign)
    with delivered():
        assert run_due_tasks() == ["expired"]
    row.refresh_from_db()
    assert row.status == Status.EXPIRED and dump(world.campaign) == before
    assert events[-1]["data"]["status"] == "expired" and events[-1]["source"] == "system"
    assert verify(world.campaign.pk) is None


def test_the_expiry_job_leaves_an_answered_call_alone(world, settings):
    settings.APPROVAL_TIMEOUT = 0.001
    row = held_hit(world)
    invocation_reject(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    assert run_due_tasks() == ["already rejected"]


def test_undoing_the_turn_withdraws_what_still_waits(world):
    row = held_hit(world)
    turn_undo(campaign_id=world.campaign.pk, turn_id=row.turn_id, user=world.owner)
    row.refresh_from_db()
    assert row.status == Status.REJECTED
    with pytest.raises(Conflict):
        invocation_approve(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    assert hp(world.goblin) == 7
    assert not ToolInvocation.objects.filter(status=Status.COMMITTED, turn_id=row.turn_id).exists()


def test_an_approved_call_the_world_now_refuses_is_logged_failed(world):
    row = held_hit(world)
    Creature.objects.filter(pk=world.goblin.pk).delete()
    outcome = invocation_approve(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
    )
    assert outcome.ran.status == Status.FAILED and "No creature" in outcome.ran.error
    assert verify(world.campaign.pk) is None
