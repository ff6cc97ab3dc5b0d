"""A GM turn that makes a critical call under the `critical` policy pauses in the database (its
worker freed), and continues on any worker once a person answers: approved, the model reads the
call's result; rejected, an is_error tool_result with the reason, and nothing changed."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.chain import verify
from audit.models import ToolInvocation
from audit.services.approval import invocation_approve, invocation_reject
from campaigns.models import Campaign, ChatMessage, Creature, Turn
from gm import runner
from gm.runner import turn_pause
from gm.services import gm_turn_run, turn_cancel, turn_submit
from gm.tasks import turn_watch
from tests.conftest import dump
from tests.gm.test_resume import Crash, crash_once, lease_runs_out, run_until_crash

Status = ToolInvocation.Status


@pytest.fixture
def critical(world):
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()
    return world.campaign


def attack(world) -> tuple[str, tuple[str, dict]]:
    return ("tool_use", ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5}))


def held_row(turn: Turn) -> ToolInvocation:
    return ToolInvocation.objects.get(turn=turn, status=Status.AWAITING_APPROVAL)


def answer(world, action, row, user, django_capture_on_commit_callbacks, **kwargs):
    with django_capture_on_commit_callbacks(execute=True):
        return action(campaign_id=world.campaign.pk, invocation_id=row.pk, user=user, **kwargs)


def gm_reply(turn: Turn) -> str:
    return ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.GM).content


def test_a_claude_turn_pauses_on_a_critical_call_and_continues_once_approved(
    world, critical, claude, play, run_gm_tasks, events, django_capture_on_commit_callbacks
):
    claude.reply(("text", ["Thorin lunges. "]), attack(world))
    claude.reply(("text", ["The goblin howls."]))

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.AWAITING_APPROVAL and turn.lease_owner == ""
    assert len(claude.requests) == 1 and Creature.objects.get(pk=world.goblin.pk).hp == 7
    row = held_row(turn)
    assert [e["type"] for e in events if e["type"].startswith("approval")] == ["approval_requested"]
    answer(world, invocation_approve, row, world.owner, django_capture_on_commit_callbacks)
    run_gm_tasks()  # any worker: the turn was queued again by the approval

    turn.refresh_from_db()
    assert turn.status == Turn.Status.COMPLETED
    assert Creature.objects.get(pk=world.goblin.pk).hp == 2
    assert len(claude.requests) == 2
    [result] = claude.requests[1]["messages"][-1]["content"]
    assert result["is_error"] is False and json.loads(result["content"])["hp"] == 2
    assert gm_reply(turn) == "Thorin lunges. \n\nThe goblin howls."
    assert verify(world.campaign.pk) is None


def test_a_rejected_call_reaches_the_model_as_an_error_and_changes_nothing(
    world, critical, claude, play, run_gm_tasks, django_capture_on_commit_callbacks
):
    claude.reply(("text", ["Thorin lunges. "]), attack(world))
    claude.reply(("text", ["The goblin sneers, untouched."]))
    before = dump(world.campaign)

    turn = play("I attack the goblin.")
    answer(
        world,
        invocation_reject,
        held_row(turn),
        world.owner,
        django_capture_on_commit_callbacks,
        reason="not yet",
    )
    run_gm_tasks()

    turn.refresh_from_db()
    assert turn.status == Turn.Status.COMPLETED and dump(world.campaign) == before
    [result] = claude.requests[1]["messages"][-1]["content"]
    assert result["is_error"] is True
    assert json.loads(result["content"])["error"] == "owner rejected this call: not yet"
    assert gm_reply(turn).endswith("The goblin sneers, untouched.")


def test_a_worker_killed_around_the_pause_loses_nothing(
    world, critical, monkeypatch, run_gm_tasks, django_capture_on_commit_callbacks
):
    """The worker dies right after the held call was logged, before the turn could pause: the
    watchdog resumes it on another worker, which finds the call waiting and pauses the turn;
    approval later resumes it again, and the call runs exactly once."""
    crashed = []

    def dying(*args, **kwargs):
        if not crashed:
            crashed.append("turn_pause")
            raise Crash("the worker dies before the turn could pause")
        return turn_pause(*args, **kwargs)

    monkeypatch.setattr(runner, "turn_pause", dying)
    turn = turn_submit(campaign=world.campaign, actor=world.player, message="I attack the goblin")
    run_until_crash(turn)
    assert crashed == ["turn_pause"]
    row = held_row(turn)

    Turn.objects.filter(pk=turn.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    turn.refresh_from_db()
    assert turn_watch(turn_id=turn.pk, attempt=turn.attempts) == "resumed"
    gm_turn_run(turn=turn)  # the second worker
    turn.refresh_from_db()
    assert turn.status == Turn.Status.AWAITING_APPROVAL and turn.lease_owner == ""
    assert turn_watch(turn_id=turn.pk, attempt=turn.attempts) == "ended"  # nothing to recover

    answer(world, invocation_approve, row, world.owner, django_capture_on_commit_callbacks)
    run_gm_tasks()  # a third worker

    turn.refresh_from_db()
    assert turn.status == Turn.Status.COMPLETED
    ran = ToolInvocation.objects.get(approval_of=row)
    assert ran.status == Status.COMMITTED
    assert ToolInvocation.objects.filter(turn=turn, tool_name="modify_creature").count() == 2
    assert "Goblin" in gm_reply(turn)
    assert verify(world.campaign.pk) is None


def test_resuming_after_an_approval_uses_up_none_of_the_retries_after_a_crash(
    world, critical, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """GM_MAX_ATTEMPTS bounds the runs that died, not the claims: a turn resumed after an
    approval (a claim) and then killed still gets its retry."""
    settings.GM_MAX_ATTEMPTS = 2  # one run may die; a second death fails the turn
    turn = turn_submit(campaign=world.campaign, actor=world.player, message="I attack the goblin")
    gm_turn_run(turn=turn)
    turn.refresh_from_db()
    assert turn.status == Turn.Status.AWAITING_APPROVAL
    answer(
        world, invocation_approve, held_row(turn), world.owner, django_capture_on_commit_callbacks
    )
    crash_once(monkeypatch, "call_tool", after=True)  # the resumed run dies after the call ran
    run_until_crash(turn)
    assert (turn.attempts, turn.recoveries) == (2, 0)

    lease_runs_out(turn)
    assert turn_watch(turn_id=turn.pk, attempt=turn.attempts) == "resumed"
    turn.refresh_from_db()
    assert (turn.status, turn.recoveries) == (Turn.Status.QUEUED, 1)
    gm_turn_run(turn=turn)

    turn.refresh_from_db()
    assert (turn.status, turn.attempts, turn.recoveries) == (Turn.Status.COMPLETED, 3, 1)
    assert ToolInvocation.objects.filter(turn=turn, status=Status.COMMITTED).exists()
    assert verify(world.campaign.pk) is None


def test_later_turns_wait_behind_a_paused_one(world, critical, run_gm_tasks):
    first = turn_submit(campaign=world.campaign, actor=world.player, message="I attack the goblin")
    second = turn_submit(campaign=world.campaign, actor=world.other, message="move me to 3,4")
    run_gm_tasks()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (Turn.Status.AWAITING_APPROVAL, Turn.Status.QUEUED)


def test_cancelling_a_paused_turn_withdraws_its_call(
    world, critical, run_gm_tasks, django_capture_on_commit_callbacks
):
    turn = turn_submit(campaign=world.campaign, actor=world.player, message="I attack the goblin")
    run_gm_tasks()
    row = held_row(turn)
    with django_capture_on_commit_callbacks(execute=True):
        turn = turn_cancel(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    run_gm_tasks()
    turn.refresh_from_db()
    row.refresh_from_db()
    assert (turn.status, row.status) == (Turn.Status.CANCELLED, Status.REJECTED)
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7
