"""A turn's transcript is stored round by round, and a turn whose worker died resumes from it:
stored rounds are never asked of the model again, and each tool_use runs once."""

import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.chain import verify
from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch
from campaigns.models import ChatMessage, Turn
from core.errors import AuditLogFailure
from gm.models import GMRound, GMTranscript
from gm.services import gm_turn_run, turn_cancel, turn_submit
from gm.session import TurnSession
from gm.tasks import turn_watch
from tests.gm.conftest import of_turn
from tests.gm.fake_claude import VERSION

TWO_ACTIONS = "I attack the goblin, then move me to 3,4"


class Crash(BaseException):
    """The worker process dies here: nothing of the runner's own handling runs."""


def crash_once(monkeypatch, name: str, *, after: bool = False) -> list[str]:
    """Make the first call of `TurnSession.<name>` kill the runner (before or after it did
    its work); later calls run normally. Returns the log of crashes."""
    original = getattr(TurnSession, name)
    crashed: list[str] = []

    def dying(self, *args, **kwargs):
        if crashed:
            return original(self, *args, **kwargs)
        crashed.append(name)
        if after:
            original(self, *args, **kwargs)
        raise Crash(name)

    monkeypatch.setattr(TurnSession, name, dying)
    return crashed


def submit(world, message: str) -> Turn:
    return turn_submit(campaign=world.campaign, actor=world.player, message=message)


def run_until_crash(turn: Turn) -> None:
    with pytest.raises(Crash):
        gm_turn_run(turn=turn)
    turn.refresh_from_db()
    assert turn.status == Turn.Status.RUNNING  # as a dead worker leaves it


def lease_runs_out(turn: Turn) -> None:
    Turn.objects.filter(pk=turn.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def calls(turn: Turn) -> list[tuple[str, str, str]]:
    rows = ToolInvocation.objects.filter(turn=turn).order_by("sequence")
    return list(rows.values_list("tool_name", "tool_use_id", "status"))


def gm_reply(turn: Turn) -> str:
    return ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.GM).content


def test_the_scripted_gm_stores_each_round_with_its_tool_use_and_result(world, run_gm_tasks):
    turn = submit(world, TWO_ACTIONS)
    run_gm_tasks()

    rounds = list(GMRound.objects.filter(turn=turn).order_by("index"))
    assert [(r.index, r.stop_reason, r.attempt) for r in rounds] == [
        (0, "tool_use", 1),
        (1, "tool_use", 1),
        (2, "end_turn", 1),
    ]
    uses = [[b for b in r.content if b["type"] == "tool_use"] for r in rounds]
    assert [[(u["id"], u["name"]) for u in us] for us in uses] == [
        [("scripted-1", "modify_creature")],
        [("scripted-2", "move_token")],
        [],
    ]
    assert [r.results[0]["tool_use_id"] for r in rounds[:2]] == ["scripted-1", "scripted-2"]
    assert all(r.completed_at is not None for r in rounds)
    assert "".join(r.text for r in rounds).strip() == gm_reply(turn)
    assert GMTranscript.objects.get(turn=turn).state["creatures"][2]["hp"] == 7  # as it began


@pytest.mark.parametrize(
    ("where", "after"),
    [
        ("record_round", False),  # mid-round: the reply was never stored
        ("call_tool", False),  # round stored, its tool call not yet made
        ("call_tool", True),  # the first call committed, the second not yet made
        ("complete_round", False),  # the first call committed, its round's result not stored
    ],
)
def test_a_scripted_turn_resumed_after_a_crash_applies_each_call_once(
    world, monkeypatch, run_gm_tasks, events, where, after
):
    turn = submit(world, TWO_ACTIONS)
    crash_once(monkeypatch, where, after=after)
    run_until_crash(turn)
    lease_runs_out(turn)

    assert turn_watch(turn_id=turn.pk, attempt=1) == "resumed"
    assert Turn.objects.get(pk=turn.pk).status == Turn.Status.QUEUED
    run_gm_tasks()

    turn.refresh_from_db()
    assert (turn.status, turn.attempts) == (Turn.Status.COMPLETED, 2)
    assert calls(turn) == [
        ("modify_creature", "scripted-1", "committed"),
        ("move_token", "scripted-2", "committed"),
    ]
    [hit] = ToolInvocation.objects.filter(turn=turn, tool_name="modify_creature")
    world.goblin.refresh_from_db()
    assert world.goblin.hp == max(0, 7 + hit.input["hp_delta"])  # damaged once
    world.hero.refresh_from_db()
    assert (world.hero.x, world.hero.y) == (3, 4)
    assert GMRound.objects.filter(turn=turn).count() == 3
    assert "Thorin strikes Goblin" in gm_reply(turn) and "moves to (3, 4)" in gm_reply(turn)
    started = [e["data"] for e in of_turn(events, turn) if e["type"] == "gm_turn_started"]
    assert started == [{"actor": "player", "model": "scripted/1", "attempt": 2}]
    assert verify(world.campaign.pk) is None


def test_the_resumed_narration_is_the_first_attempts_word_for_word(
    world, monkeypatch, run_gm_tasks
):
    twin = submit(world, TWO_ACTIONS)
    crash_once(monkeypatch, "call_tool", after=True)
    run_until_crash(twin)
    lease_runs_out(twin)
    turn_watch(turn_id=twin.pk, attempt=1)
    run_gm_tasks()
    stored = "".join(GMRound.objects.filter(turn=twin).values_list("text", flat=True)).strip()
    assert gm_reply(twin) == stored


@pytest.fixture
def claude_two_rounds(world, claude):
    attack = ("tool_use", ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5}))
    step = ("tool_use", ("move_token", {"creature_id": world.hero.pk, "x": 3, "y": 4}))
    claude.reply(("text", ["Thorin lunges "]), attack, step)
    claude.reply(("text", ["and the goblin howls."]))
    return claude


@pytest.mark.parametrize(
    ("where", "after", "requests"),
    [
        ("call_tool", False, 2),  # round 0 stored, no call made: round 0 is not asked again
        ("call_tool", True, 2),  # between the two calls of round 0
        ("complete_round", False, 2),  # both calls made, their results not stored
        ("record_round", False, 3),  # mid-round: the reply was never stored, so it is asked again
    ],
)
def test_a_claude_turn_resumes_from_its_transcript_without_asking_stored_rounds_again(
    world, claude_two_rounds, monkeypatch, run_gm_tasks, where, after, requests
):
    claude = claude_two_rounds
    if requests == 3:  # the lost reply is asked again; the fake answers it again the same way
        claude._replies.appendleft(claude._replies[0])
    turn = submit(world, "I attack the goblin and step to 3,4.")
    crash_once(monkeypatch, where, after=after)
    run_until_crash(turn)
    lease_runs_out(turn)
    turn_watch(turn_id=turn.pk, attempt=1)
    run_gm_tasks()

    turn.refresh_from_db()
    assert (turn.status, turn.attempts) == (Turn.Status.COMPLETED, 2)
    assert len(claude.requests) == requests
    assert [(n, s) for n, _, s in calls(turn)] == [
        ("modify_creature", "committed"),
        ("move_token", "committed"),
    ]
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 2  # hit once
    last = claude.requests[-1]["messages"]
    assert [b["type"] for b in last[-2]["content"]] == ["text", "tool_use", "tool_use"]
    assert [b["is_error"] for b in last[-1]["content"]] == [False, False]
    assert gm_reply(turn) == "Thorin lunges \n\nand the goblin howls."
    assert GMRound.objects.get(turn=turn, index=1).model == f"anthropic/{VERSION}"


def test_a_tool_use_is_logged_once_per_turn(world):
    turn = world.turn(message="I attack the goblin")
    call = {
        "campaign": world.campaign,
        "actor": world.player,
        "tool_name": "modify_creature",
        "input": {"creature_id": world.goblin.pk, "hp_delta": -2},
        "turn": turn,
        "tool_use_id": "toolu_1",
        "source": InvocationOrigin.GM,
    }
    first = invocation_dispatch(**call)
    with pytest.raises(AuditLogFailure):  # fail-closed: no second row, no second hit
        invocation_dispatch(**call)

    assert list(ToolInvocation.objects.values_list("pk", flat=True)) == [first.pk]
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 5
    other_turn = world.turn(message="Again")
    assert invocation_dispatch(**{**call, "turn": other_turn}).status == "committed"
    assert verify(world.campaign.pk) is None


def test_the_database_refuses_a_second_row_for_a_tool_use(world):
    turn = world.turn(message="I attack the goblin")
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        tool_name="set_scene",
        input={"description": "A cave."},
        turn=turn,
        tool_use_id="toolu_1",
        source=InvocationOrigin.GM,
    )
    twin = {f.attname: getattr(row, f.attname) for f in ToolInvocation._meta.concrete_fields}
    twin.update(id=None, sequence=row.sequence + 1)
    with pytest.raises(IntegrityError), transaction.atomic():
        ToolInvocation.objects.create(**{k: v for k, v in twin.items() if k != "id"})
    blank = {**twin, "tool_use_id": "", "sequence": row.sequence + 2}
    ToolInvocation.objects.create(**{k: v for k, v in blank.items() if k != "id"})


def test_a_turn_cancelled_while_queued_to_resume_says_what_it_did(world, monkeypatch, run_gm_tasks):
    turn = submit(world, TWO_ACTIONS)
    crash_once(monkeypatch, "call_tool", after=True)  # the first call committed
    run_until_crash(turn)
    lease_runs_out(turn)
    turn_watch(turn_id=turn.pk, attempt=1)

    cancelled = turn_cancel(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)

    assert cancelled.status == Turn.Status.CANCELLED
    # The scripted GM narrates a call's outcome in the next round, which was never stored.
    assert not ChatMessage.objects.filter(turn=turn, role=ChatMessage.Role.GM).exists()
    note = ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.SYSTEM).content
    assert note == (
        "player stopped the GM on this turn. Its tool calls so far are in the log and can be "
        "undone."
    )
    assert calls(turn) == [("modify_creature", "scripted-1", "committed")]
    run_gm_tasks()  # its resume task finds nothing to run
    assert calls(turn) == [("modify_creature", "scripted-1", "committed")]


def test_a_gm_roll_in_a_rerun_round_is_the_first_attempts_roll(
    world, claude, monkeypatch, run_gm_tasks
):
    """The dice are rolled once per tool_use: the round re-run after a crash between its two
    calls reads back the roll the table already saw, not a second roll with other dice."""
    from campaigns.models import DiceRoll

    dice = ("tool_use", ("roll_dice", {"expression": "1d100"}))
    attack = ("tool_use", ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1}))
    claude.reply(dice, attack)
    claude.reply(("text", ["The dice have spoken."]))
    turn = submit(world, "I roll for it.")
    crash_once(monkeypatch, "call_tool", after=True)  # dies after the roll, before the attack
    run_until_crash(turn)
    [first] = DiceRoll.objects.filter(turn=turn)
    lease_runs_out(turn)
    turn_watch(turn_id=turn.pk, attempt=1)
    run_gm_tasks()

    turn.refresh_from_db()
    assert turn.status == Turn.Status.COMPLETED
    assert list(DiceRoll.objects.filter(turn=turn)) == [first]
    told = claude.requests[-1]["messages"][-1]["content"][0]
    assert told["is_error"] is False
    assert json.loads(told["content"])["rolls"] == first.dice
