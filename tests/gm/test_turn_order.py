"""Two turns of one campaign never run their GM at once, and run oldest first; turns of another
campaign do not wait for them."""

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from campaigns.models import Turn
from gm.models import GMTranscript
from gm.runner import claim_run
from gm.services import turn_submit
from gm.tasks import _next_queued, turn_claim, turn_enqueue_next
from tests.conftest import build_world


def submit(world, message: str) -> Turn:
    return turn_submit(campaign=world.campaign, actor=world.player, message=message)


def statuses(*turns: Turn) -> list[str]:
    return [Turn.objects.get(pk=t.pk).status for t in turns]


def test_a_later_turn_waits_queued_while_its_campaign_runs_one_and_then_goes_next(
    world, run_gm_tasks
):
    first = submit(world, "I attack the goblin")
    second = submit(world, "we take a short rest")
    claim = turn_claim(campaign_id=world.campaign.pk)
    assert claim.turn.pk == first.pk

    assert set(run_gm_tasks()) == {
        "nothing to run: the campaign's turn is running, or none is queued"
    }
    assert statuses(first, second) == ["running", "queued"]

    claim_run(claim)  # the first turn ends...
    turn_enqueue_next(campaign_id=world.campaign.pk)  # ...and hands the campaign to the next
    assert run_gm_tasks() == [f"turn {second.pk} completed"]
    assert statuses(first, second) == ["completed", "completed"]


def test_any_task_of_a_campaign_runs_its_oldest_queued_turn_first(world, run_gm_tasks):
    first = submit(world, "I attack the goblin")
    second = submit(world, "I attack the orc")
    DBTaskResult.objects.filter(args_kwargs__args=[first.pk]).delete()  # its task comes late

    assert run_gm_tasks() == [f"turn {first.pk} completed", f"turn {second.pk} completed"]


def test_another_campaigns_turn_runs_while_this_one_is_busy(world, run_gm_tasks):
    busy = submit(world, "I attack the goblin")
    turn_claim(campaign_id=world.campaign.pk)
    elsewhere = build_world("b-")
    other = turn_submit(campaign=elsewhere.campaign, actor=elsewhere.player, message="I attack")

    results = run_gm_tasks()

    assert f"turn {other.pk} completed" in results
    assert statuses(busy, other) == ["running", "completed"]


def test_the_database_refuses_a_second_running_turn_in_a_campaign(world):
    first, second = world.turn(message="A"), world.turn(message="B")
    Turn.objects.filter(pk=first.pk).update(status=Turn.Status.RUNNING)
    with pytest.raises(IntegrityError), transaction.atomic():
        Turn.objects.filter(pk=second.pk).update(status=Turn.Status.RUNNING)
    elsewhere = build_world("b-").turn(message="C")
    Turn.objects.filter(pk=elsewhere.pk).update(status=Turn.Status.RUNNING)
    assert Turn.objects.filter(status="running").count() == 2


def test_a_claim_cancels_undone_queued_turns_and_takes_the_oldest_other_with_its_actor(world):
    undone, first, second = (submit(world, m) for m in ("I flee", "I attack", "I rest"))
    Turn.objects.filter(pk=undone.pk).update(reverted_at=timezone.now())
    build_world("b-").turn(message="elsewhere")  # another campaign's turns are none of its

    assert turn_claim(campaign_id=world.campaign.pk, turn_id=second.pk) is None
    claim = turn_claim(campaign_id=world.campaign.pk)

    assert claim.turn.pk == first.pk and claim.turn.actor == world.player
    assert (claim.turn.status, claim.turn.attempts, claim.turn.lease_owner) == (
        "running",
        1,
        claim.owner,
    )
    assert statuses(undone, first, second) == ["cancelled", "running", "queued"]
    assert claim.state == GMTranscript.objects.get(turn=first).state


def test_a_turn_held_for_approval_holds_its_campaigns_line_too(world):
    paused, later = submit(world, "I attack"), submit(world, "I rest")
    Turn.objects.filter(pk=paused.pk).update(status=Turn.Status.AWAITING_APPROVAL)

    assert turn_claim(campaign_id=world.campaign.pk) is None
    assert _next_queued(world.campaign.pk) is None
    Turn.objects.filter(pk=paused.pk).update(status=Turn.Status.COMPLETED)
    assert _next_queued(world.campaign.pk) == later.pk
    assert _next_queued(build_world("b-").campaign.pk) is None
