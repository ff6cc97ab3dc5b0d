"""GM turns in real worker processes (`manage.py task_worker`): a worker killed with SIGKILL
mid-turn loses its lease, and the turn resumes on another worker within a bounded time, each
tool call applied exactly once; turns of one campaign run one at a time, campaigns in parallel.

The scripted GM waits `DELAY` seconds per round here, as a model would, so a test can kill a
worker in the middle of a round or between two tool calls. Every wait is a poll with a deadline.
"""

import time
from collections.abc import Callable
from typing import Any

import pytest

from audit.models import ToolInvocation
from campaigns.models import ChatMessage, Creature, Turn
from gm.models import GMRound
from gm.services import turn_submit
from tests.conftest import World, build_world
from tests.servers import WorkerProcess

DELAY = 1.0  # seconds per round of the scripted GM
LEASE = 2.0  # GM_LEASE_SECONDS of the workers
DEADLINE = 45.0  # a condition not met by then fails the test
TWO_ACTIONS = "I attack the goblin, then move me to 3,4"


def wait_for(condition: Callable[[], Any], what: str, workers: list[WorkerProcess]) -> Any:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.02)
    logs = "\n".join(f"--- {w.name}\n{w.output()[-3000:]}" for w in workers)
    raise AssertionError(f"not within {DEADLINE} s: {what}\n{logs}")


def turn_now(turn: Turn) -> Turn:
    return Turn.objects.get(pk=turn.pk)


def _pid(turn: Turn) -> str:
    """The process id in the turn's lease owner (host:pid:nonce)."""
    owner = turn_now(turn).lease_owner
    return owner.split(":")[1] if owner else ""


def submit(world: World, message: str) -> Turn:
    return turn_submit(campaign=world.campaign, actor=world.player, message=message)


def test_a_worker_process_answers_a_queued_turn(live_world: World, gm_workers):
    worker = gm_workers()
    turn = submit(live_world, "I attack the goblin")

    wait_for(lambda: turn_now(turn).status == "completed", "the turn completed", [worker])

    [row] = ToolInvocation.objects.filter(turn=turn)
    assert (row.tool_name, row.tool_use_id, row.status) == (
        "modify_creature",
        "scripted-1",
        "committed",
    )
    assert f":{worker.pid}:" not in turn_now(turn).lease_owner  # released
    assert "Thorin strikes Goblin" in ChatMessage.objects.get(turn=turn, role="gm").content


def killed_mid_round(turn: Turn) -> bool:
    """The first round is under way (the GM is thinking) and nothing of it is stored yet."""
    return turn_now(turn).status == "running" and not GMRound.objects.filter(turn=turn).exists()


def killed_between_calls(turn: Turn) -> bool:
    """The first tool call has committed; the second round is still being thought."""
    return ToolInvocation.objects.filter(turn=turn).count() == 1


@pytest.mark.parametrize("moment", [killed_mid_round, killed_between_calls])
def test_a_turn_whose_worker_is_killed_resumes_elsewhere_applying_each_call_once(
    live_world: World, gm_workers, moment
):
    world = live_world
    first = gm_workers(delay=DELAY, lease=LEASE)
    turn = submit(world, TWO_ACTIONS)
    wait_for(
        lambda: f":{first.pid}:" in turn_now(turn).lease_owner, "the first worker ran it", [first]
    )
    wait_for(lambda: moment(turn), moment.__doc__, [first])

    first.kill()
    second = gm_workers(delay=DELAY, lease=LEASE)

    ended = wait_for(
        lambda: (t := turn_now(turn)).status not in ("queued", "running") and t,
        "the turn ended on the second worker",
        [first, second],
    )
    assert (ended.status, ended.attempts) == ("completed", 2)
    rows = ToolInvocation.objects.filter(turn=turn).order_by("sequence")
    assert list(rows.values_list("tool_name", "tool_use_id", "status")) == [
        ("modify_creature", "scripted-1", "committed"),
        ("move_token", "scripted-2", "committed"),
    ]
    damage = -rows[0].input["hp_delta"]
    assert Creature.objects.get(pk=world.goblin.pk).hp == max(0, 7 - damage)  # hit once
    hero = Creature.objects.get(pk=world.hero.pk)
    assert (hero.x, hero.y) == (3, 4)
    rounds = list(GMRound.objects.filter(turn=turn).order_by("index"))
    assert [r.index for r in rounds] == [0, 1, 2]
    reply = ChatMessage.objects.get(turn=turn, role="gm").content
    assert reply == "".join(r.text for r in rounds).strip()
    assert f"for {damage} damage" in reply and "moves to (3, 4)" in reply


def test_a_turn_whose_workers_keep_dying_fails_plainly(live_world: World, gm_workers):
    world = live_world
    turn = submit(world, TWO_ACTIONS)
    workers = []
    for attempt in (1, 2):
        worker = gm_workers(delay=DELAY, lease=LEASE, attempts=2)
        workers.append(worker)
        claimed = f"{attempt}:{worker.pid}"
        wait_for(
            lambda claimed=claimed: f"{turn_now(turn).attempts}:{_pid(turn)}" == claimed,
            f"attempt {attempt} running",
            workers,
        )
        worker.kill()
    workers.append(gm_workers(delay=DELAY, lease=LEASE, attempts=2))  # runs the watchdog

    ended = wait_for(lambda: (t := turn_now(turn)).status == "failed" and t, "failed", workers)
    assert ended.attempts == 2
    note = ChatMessage.objects.get(turn=turn, role="system").content
    assert note.startswith(
        "The GM could not finish this turn: the worker running it stopped responding (2 attempts)."
    )
    assert ToolInvocation.objects.filter(turn=turn).count() <= 1


def test_two_workers_run_two_campaigns_at_once_and_one_campaign_in_order(
    live_world: World, gm_workers
):
    world, elsewhere = live_world, build_world("b-")
    workers = [gm_workers(delay=DELAY), gm_workers(delay=DELAY)]
    a1 = submit(world, "I attack the goblin")
    a2 = submit(world, "I attack the orc")
    b1 = turn_submit(campaign=elsewhere.campaign, actor=elsewhere.player, message="I attack")

    def both_campaigns_running():
        running = set(Turn.objects.filter(status="running").values_list("pk", flat=True))
        assert len(running & {a1.pk, a2.pk}) <= 1
        return {a1.pk, b1.pk} <= running

    wait_for(both_campaigns_running, "a turn of each campaign running at once", workers)
    wait_for(
        lambda: all(turn_now(t).status == "completed" for t in (a1, a2, b1)),
        "every turn completed",
        workers,
    )
    first_done = GMRound.objects.filter(turn=a1).order_by("-index").first().completed_at
    second_began = GMRound.objects.filter(turn=a2).order_by("index").first().created_at
    assert first_done < second_began


def _span(turn: Turn) -> tuple[Any, Any]:
    """When the GM began the turn's first round, and when it ended its last."""
    rounds = GMRound.objects.filter(turn=turn).order_by("index")
    return rounds.first().created_at, rounds.last().completed_at


def test_a_worker_with_threads_runs_several_campaigns_turns_at_once(live_world: World, gm_workers):
    """`--threads 3`: one process runs three campaigns' turns side by side, each under a lease
    of its own, and a fourth waits for a thread: the first that ends claims it (its end wakes
    the worker; nothing else would, within the test). Its database pool is let grow to what
    three turns hold (a connection for each and one for each heartbeat) above DB_POOL_MAX_SIZE."""
    worlds = [live_world, build_world("b-"), build_world("c-"), build_world("d-")]
    pool = {"DB_POOL_MAX_SIZE": "2", "DB_POOL_TIMEOUT": "2"}
    worker = gm_workers(delay=DELAY, threads=3, wait_max=600, **pool)
    turns = [submit(world, "I attack the goblin") for world in worlds]
    owners: set[str] = set()

    def three_running():
        running = Turn.objects.filter(pk__in=[t.pk for t in turns], status="running")
        now = set(running.values_list("lease_owner", flat=True))
        owners.update(now)
        return len(now) == 3

    wait_for(three_running, "three turns running at once in one process", [worker])
    wait_for(
        lambda: all(turn_now(t).status == "completed" for t in turns),
        "every turn completed",
        [worker],
    )
    assert {owner.split(":")[1] for owner in owners} == {str(worker.pid)}
    assert len(owners) >= 3  # a lease per turn
    spans = [_span(t) for t in turns]
    assert max(began for began, _ in spans) >= min(ended for _, ended in spans)  # never four
    for turn in turns:
        assert ToolInvocation.objects.filter(turn=turn, status="committed").count() == 1
    assert "Traceback" not in worker.output(), worker.output()[-3000:]


def test_a_stopped_worker_ends_its_running_turns_and_claims_no_more(live_world: World, gm_workers):
    worlds = [live_world, build_world("b-"), build_world("c-")]
    worker = gm_workers(delay=DELAY, threads=2)
    first = [submit(world, TWO_ACTIONS) for world in worlds[:2]]
    wait_for(
        lambda: all(turn_now(t).status == "running" for t in first), "two turns running", [worker]
    )

    worker.process.terminate()  # SIGTERM, as honcho or systemd stop it
    later = submit(worlds[2], "I attack the goblin")

    assert worker.process.wait(timeout=DEADLINE) == 0, worker.output()[-3000:]
    assert [turn_now(t).status for t in first] == ["completed", "completed"]
    assert ToolInvocation.objects.filter(turn__in=first, status="committed").count() == 4
    assert turn_now(later).status == "queued"  # for the next worker
    assert "finishing 2 running jobs" in worker.output()


def test_a_second_signal_exits_at_once_and_leaves_the_turn_to_its_lease(
    live_world: World, gm_workers
):
    worker = gm_workers(delay=DELAY * 5, threads=2)
    turn = submit(live_world, TWO_ACTIONS)
    wait_for(lambda: turn_now(turn).status == "running", "the turn running", [worker])

    worker.process.terminate()
    wait_for(lambda: "finishing 1 running job " in worker.output(), "the first signal", [worker])
    worker.process.terminate()

    assert worker.process.wait(timeout=DEADLINE) == 1, worker.output()[-3000:]
    now = turn_now(turn)
    assert now.status == "running"  # the watchdog resumes it when its lease runs out
    assert f":{worker.pid}:" in now.lease_owner
