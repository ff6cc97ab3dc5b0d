"""Leases: a running turn's worker renews its lease; one that lost it stops before writing more;
a lease nobody renews makes the watchdog resume the turn, or fail it after GM_MAX_ATTEMPTS."""

import time
from datetime import timedelta
from functools import partial

import pytest
from django.core.management import call_command
from django.db import OperationalError, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from audit.models import ToolInvocation
from campaigns.models import Campaign, ChatMessage, Turn
from gm.base import Session, TurnStopped
from gm.lease import lease_check, lease_hold, turn_lock, turn_now
from gm.models import GMRound
from gm.runner import claim_run
from gm.services import gm_turn_run, turn_submit
from gm.tasks import turn_claim, turn_watch
from tests.conftest import all_at_once, build_world
from tests.gm.conftest import Provider, of_turn

DEADLINE = 10  # seconds a polled condition may take


def hit(session: Session, tool_use_id: str):
    goblin = next(c for c in session.context.state["creatures"] if c["name"] == "Goblin")
    return session.call_tool(
        "modify_creature",
        {"creature_id": goblin["id"], "hp_delta": -1},
        model="test/gm-1",
        tool_use_id=tool_use_id,
    )


def submit(world, message: str = "I attack the goblin") -> Turn:
    return turn_submit(campaign=world.campaign, actor=world.player, message=message)


def expire(turn: Turn, *, recoveries: int | None = None) -> None:
    """The turn's lease ran out; `recoveries`: as many earlier runs of it had died."""
    extra = {} if recoveries is None else {"recoveries": recoveries}
    Turn.objects.filter(pk=turn.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1), **extra
    )


def watches(turn: Turn) -> list[tuple[int, object]]:
    """The turn's pending watchdogs: (attempt, due)."""
    return sorted(
        (t.args_kwargs["args"][1], t.run_after)
        for t in DBTaskResult.objects.filter(status="READY", task_path="gm.tasks.watch_turn")
        if t.args_kwargs["args"][0] == turn.pk
    )


def watch(turn: Turn) -> str:
    return turn_watch(turn_id=turn.pk, attempt=Turn.objects.get(pk=turn.pk).attempts)


def test_a_claim_takes_a_lease_and_its_own_watchdog_at_the_lease_end(world, settings):
    settings.GM_LEASE_SECONDS = 45
    turn = submit(world)
    [(queued_attempt, waiting)] = watches(turn)
    assert queued_attempt == 0
    claim = turn_claim(campaign_id=world.campaign.pk)

    turn.refresh_from_db()
    assert (turn.status, turn.attempts, turn.lease_owner) == ("running", 1, claim.owner)
    remaining = (turn.lease_expires_at - timezone.now()).total_seconds()
    assert 40 < remaining <= 45
    due = turn.lease_expires_at + timedelta(seconds=1)
    assert watches(turn) == [(0, waiting), (1, due)]
    assert turn_watch(turn_id=turn.pk, attempt=0) == "superseded"  # the queued turn's watchdog
    assert turn_watch(turn_id=turn.pk, attempt=1) == "alive"  # the lease runs: look again later
    assert watches(turn) == [(0, waiting), (1, due), (1, due)]


def test_an_expired_lease_puts_the_turn_back_in_the_queue_to_resume(world, events):
    turn = submit(world)
    turn_claim(campaign_id=world.campaign.pk)
    expire(turn)

    assert watch(turn) == "resumed"

    turn.refresh_from_db()
    assert (turn.status, turn.lease_owner, turn.attempts) == ("queued", "", 1)
    assert turn.lease_expires_at > timezone.now()
    ready = DBTaskResult.objects.ready().filter(task_path="gm.tasks.run_turn")
    assert [t.args_kwargs["args"] for t in ready] == [[turn.pk], [turn.pk]]  # first one, resume


def test_past_the_last_attempt_the_turn_fails_plainly_keeping_what_it_did(
    world, settings, django_capture_on_commit_callbacks, events
):
    settings.GM_MAX_ATTEMPTS = 2
    turn = submit(world)
    claim = turn_claim(campaign_id=world.campaign.pk)
    hit_once = []

    def dies_after_a_hit(session):
        hit_once.append(hit(session, "use-1"))
        raise KeyboardInterrupt  # stands for the process dying: nothing is cleaned up

    with pytest.raises(KeyboardInterrupt):
        claim_run(claim, Provider(dies_after_a_hit))
    expire(turn, recoveries=1)  # this run is the second to die
    with django_capture_on_commit_callbacks(execute=True):
        assert watch(turn) == "failed"

    turn.refresh_from_db()
    assert (turn.status, turn.lease_owner, turn.lease_expires_at) == ("failed", "", None)
    note = ChatMessage.objects.get(turn=turn, role="system").content
    assert note == (
        "The GM could not finish this turn: the worker running it stopped responding "
        "(2 attempts). Its tool calls so far are in the log and can be undone."
    )
    assert ToolInvocation.objects.get(turn=turn).status == "committed"
    done = of_turn(events, turn)[-1]
    assert (done["type"], done["source"]) == ("gm_turn_completed", "system")
    assert done["data"]["status"] == "failed"
    assert done["data"]["invocations"] == [hit_once[0].invocation]


def test_a_runner_that_lost_its_lease_stops_before_writing_more(world, events, play):
    seen = []

    def taken_over(session):
        assert hit(session, "use-1").ok
        Turn.objects.filter(pk=session.context.turn.pk).update(lease_owner="another:1:abc")
        session.say("The goblin")
        seen.append("said")
        hit(session, "use-2")
        seen.append("hit again")

    turn = play("I attack the goblin", provider=Provider(taken_over))

    assert seen == ["said"]
    assert (turn.status, turn.lease_owner) == ("running", "another:1:abc")  # the new runner's
    assert ToolInvocation.objects.filter(turn=turn).count() == 1
    assert list(ChatMessage.objects.filter(turn=turn).values_list("role", flat=True)) == ["player"]
    assert "gm_turn_completed" not in [e["type"] for e in of_turn(events, turn)]


def test_a_turn_cancelled_while_its_worker_was_dead_ends_cancelled(world, events):
    turn = submit(world)
    turn_claim(campaign_id=world.campaign.pk)
    Turn.objects.filter(pk=turn.pk).update(
        cancel_requested_at=timezone.now(), cancel_requested_by=world.owner
    )
    expire(turn)
    assert watch(turn) == "cancelled"
    turn.refresh_from_db()
    assert turn.status == "cancelled"
    assert ChatMessage.objects.get(turn=turn, role="system").content == (
        "owner stopped the GM on this turn."
    )


def test_a_queued_turn_that_lost_its_task_is_handed_to_a_worker_again(world, run_gm_tasks):
    turn = submit(world)
    DBTaskResult.objects.filter(task_path="gm.tasks.run_turn").update(status="RUNNING")  # lost
    expire(turn)

    assert watch(turn) == "re-enqueued"
    run_gm_tasks()
    assert Turn.objects.get(pk=turn.pk).status == "completed"


def test_a_queued_turn_behind_another_just_waits(world):
    first, second = submit(world), submit(world, "I attack the orc")
    expire(second)
    assert watch(second) == "waiting"
    assert DBTaskResult.objects.filter(task_path="gm.tasks.run_turn").count() == 2
    assert Turn.objects.get(pk=first.pk).status == "queued"


def test_the_recover_command_acts_on_every_overdue_turn(world, capsys):
    running = submit(world)
    turn_claim(campaign_id=world.campaign.pk)
    expire(running)
    call_command("gm_recover_turns")
    assert capsys.readouterr().out.strip() == f"resumed: 1 turn(s) [{running.pk}]"
    call_command("gm_recover_turns")
    assert capsys.readouterr().out.strip() == "No GM turn is overdue."


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_keeps_renewing_the_lease_of_a_slow_turn(world, settings):
    settings.GM_LEASE_SECONDS = 1.5
    turn = submit(world)
    renewals = []

    def slow(session):
        first = Turn.objects.get(pk=turn.pk).lease_expires_at
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline and len(renewals) < 3:
            current = Turn.objects.get(pk=turn.pk).lease_expires_at
            if current > (renewals[-1] if renewals else first):
                renewals.append(current)
            time.sleep(0.05)
        session.say("At last, the goblin falls.")

    ended = gm_turn_run(turn=turn, provider=Provider(slow))

    assert len(renewals) == 3
    assert ended.status == "completed" and ended.attempts == 1


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_stops_a_runner_whose_turn_went_elsewhere(world, settings):
    settings.GM_LEASE_SECONDS = 1.5
    turn = submit(world)
    said = []

    def speaks_until_stopped(session):
        Turn.objects.filter(pk=turn.pk).update(lease_owner="another:1:abc")
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            session.say("on and on ")  # raises once the heartbeat found the lease gone
            said.append(1)
            time.sleep(0.05)

    ended = gm_turn_run(turn=turn, provider=Provider(speaks_until_stopped))

    assert 0 < len(said) < DEADLINE / 0.05
    assert (ended.status, ended.lease_owner) == ("running", "another:1:abc")
    assert list(ChatMessage.objects.filter(turn=turn).values_list("role", flat=True)) == ["player"]


def test_a_runner_that_lost_its_lease_stores_no_more_rounds(world, play):
    stopped = []

    def taken_over(session):
        Turn.objects.filter(pk=session.context.turn.pk).update(lease_owner="another:1:abc")
        try:
            session.record_round(content=[], stop_reason="end_turn", model="test/gm-1", text="")
        except TurnStopped as stop:
            stopped.append(stop.why)
            raise

    turn = play("I wait", provider=Provider(taken_over))

    assert stopped == [TurnStopped.LOST]
    assert not GMRound.objects.filter(turn=turn).exists()


def locked_elsewhere(model, pk) -> bool:
    """Whether another connection finds the row locked."""
    try:
        with transaction.atomic():
            list(model.objects.select_for_update(nowait=True).filter(pk=pk))
    except OperationalError:
        return True
    return False


@pytest.mark.django_db(transaction=True)
def test_a_lease_check_holds_the_campaign_and_the_turn_locked_for_its_owner_only(world):
    turn, elsewhere = submit(world), build_world("b-").turn(message="elsewhere")
    claim = turn_claim(campaign_id=world.campaign.pk)
    with transaction.atomic():
        lease_check(claim.turn, claim.owner)
        rows = (Campaign, world.campaign.pk), (Turn, turn.pk), (Campaign, elsewhere.campaign_id)
        seen = all_at_once(*(partial(locked_elsewhere, model, pk) for model, pk in rows))
    assert seen == [True, True, False]
    with pytest.raises(TurnStopped), transaction.atomic():
        lease_check(claim.turn, "another:1:abc")
    with transaction.atomic():
        assert turn_lock(elsewhere).pk == elsewhere.pk
        held = lease_hold(claim.turn, claim.owner)
    assert (held.pk, held.status, held.lease_owner) == (turn.pk, "running", claim.owner)


def test_a_runner_reads_its_turn_as_it_is_now(world):
    turn, other = submit(world), submit(world, "I rest")
    claim = turn_claim(campaign_id=world.campaign.pk)
    Turn.objects.filter(pk=turn.pk).update(cancel_requested_at=timezone.now())

    now = turn_now(turn.pk)
    assert (now.status, now.lease_owner, now.reverted_at) == ("running", claim.owner, None)
    assert now.cancel_requested_at is not None
    assert turn_now(other.pk) == ("queued", "", None, None)
    assert turn_now(other.pk + 1000) is None
