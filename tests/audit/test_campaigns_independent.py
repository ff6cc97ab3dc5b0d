"""Campaigns do not serialise on anything global (issue 13): a campaign's write, held at the
last instant before its COMMIT (so it holds every lock it will ever take: its campaign row, the
rows it changed, its new log rows and event numbers), holds up no write of another campaign.

The other campaign's write runs with PostgreSQL's `lock_timeout`, so waiting on any lock the
first one holds (a row, a table, an advisory lock, a shared counter) fails it within seconds
instead of hanging. `bench/table_load.py` measures the same rule under load and shows, with
BENCH_GLOBAL_LOCK=1, what a global lock looks like there."""

import threading
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from django.db import connection, connections

from audit.models import ToolInvocation
from audit.services import invocation_revert, turn_undo
from campaigns.models import Creature, Turn
from campaigns.services import turn_create
from gm.services import turn_submit
from tests.conftest import World, build_world, call

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 20  # seconds any step may take before the test calls it stuck


def hit(world: World, turn: Turn | None = None) -> ToolInvocation:
    data = {"creature_id": world.goblin.pk, "hp_delta": -1}
    return call(world, "modify_creature", data, actor=world.player, turn=turn)


def tool_call(world: World) -> Any:
    return hit(world)


def player_turn(world: World) -> Any:
    return turn_create(campaign=world.campaign, actor=world.player, message="I look around.")


def gm_turn(world: World) -> Any:
    return turn_submit(campaign=world.campaign, actor=world.player, message="I open the door.")


def undo(world: World) -> Any:
    turn = player_turn(world)
    hit(world, turn)
    return lambda: turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)


def revert(world: World) -> Any:
    row = hit(world)
    return lambda: invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.player
    )


# Each write: a function of the world that does it, or (marked `prepared`) one that sets it up
# and returns the write itself.
WRITES: dict[str, tuple[Callable[[World], Any], bool]] = {
    "tool call": (tool_call, False),
    "player turn": (player_turn, False),
    "GM turn (queued)": (gm_turn, False),
    "undo": (undo, True),
    "revert": (revert, True),
}


def write_of(name: str, world: World) -> Callable[[], Any]:
    make, prepared = WRITES[name]
    return make(world) if prepared else (lambda: make(world))


class Held(threading.Thread):
    """Runs `write` on a thread of its own and holds it at its COMMIT until `release`."""

    def __init__(self, write: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.write = write
        self.at_commit = threading.Event()
        self.release = threading.Event()
        self.result: Any = None

    def run(self) -> None:
        commit = connection._commit  # this thread's own connection

        def held_commit() -> None:
            self.at_commit.set()
            self.release.wait(WAIT)
            commit()

        try:
            with mock.patch.object(connection, "_commit", held_commit):
                self.result = self.write()
        except Exception as exc:  # the assertions report it
            self.result = exc
        finally:
            connections.close_all()


def run_with_lock_timeout(write: Callable[[], Any]) -> Any:
    """`write` on a fresh connection whose every lock wait gives up after 5 s."""
    outcome: list[Any] = []

    def body() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '5s'")
            outcome.append(write())
        except Exception as exc:
            outcome.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(WAIT)
    assert outcome, "the other campaign's write never finished"
    return outcome[0]


@pytest.mark.parametrize("held_write", list(WRITES))
@pytest.mark.parametrize("other_write", ["tool call", "player turn", "undo"])
def test_a_write_held_at_commit_holds_up_no_other_campaigns_write(held_write, other_write):
    here, there = build_world("here-"), build_world("there-")
    held = Held(write_of(held_write, here))
    other = write_of(other_write, there)
    held.start()
    try:
        assert held.at_commit.wait(WAIT), f"the held {held_write} never reached its commit"
        result = run_with_lock_timeout(other)
        assert not isinstance(result, Exception), f"{other_write} waited on {held_write}: {result}"
    finally:
        held.release.set()
        held.join(WAIT)
    assert not isinstance(held.result, Exception), held.result
    # Both committed, each in its own campaign.
    if isinstance(held.result, ToolInvocation):
        assert ToolInvocation.objects.get(pk=held.result.pk).status == "committed"
    if other_write == "tool call":
        assert ToolInvocation.objects.get(pk=result.pk).campaign_id == there.campaign.pk
        assert Creature.objects.get(pk=there.goblin.pk).hp == 7 - 1
    elif other_write == "undo":
        assert result.reverted
        assert Creature.objects.get(pk=there.goblin.pk).hp == 7
    else:
        assert Turn.objects.filter(pk=result.pk, campaign=there.campaign).exists()


def test_the_same_campaigns_write_does_wait_for_the_held_one():
    """The check above can fail: the same campaign's second write does wait on its lock."""
    world = build_world()
    held = Held(write_of("tool call", world))
    held.start()
    try:
        assert held.at_commit.wait(WAIT)
        result = run_with_lock_timeout(lambda: hit(world))
        # The dispatch fails closed on a database error (AuditLogFailure) caused by the timeout.
        assert isinstance(result, Exception), result
        assert "lock timeout" in f"{result} {result.__cause__} {result.__context__}", result
    finally:
        held.release.set()
        held.join(WAIT)
    assert held.result.status == "committed"
