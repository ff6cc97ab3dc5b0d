"""The Claude GM when the stream goes wrong: a reply that never finished is never taken as one.

A stream cut short (no message_delta/message_stop), a TCP reset, an `error` event and
`stop_reason: max_tokens` in a tool call all fail the turn with a plain system note. No tool
call is run from a message that did not finish; calls of earlier, finished rounds stay in the
log, undoable.
"""

import re

import pytest

from audit.models import ToolInvocation
from campaigns.models import ChatMessage, Turn
from tests.gm.conftest import of_turn

pytestmark = pytest.mark.usefixtures("claude")


def system_note(turn) -> str:
    return ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.SYSTEM).content


def attack(world) -> tuple[str, tuple[str, dict]]:
    return ("tool_use", ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5}))


def test_a_cut_stream_fails_the_turn_instead_of_completing_it(world, claude, play, events):
    claude.cut(("text", ["The goblin raises its blade and "]))

    turn = play("I look at the goblin.")

    assert turn.status == Turn.Status.FAILED
    assert system_note(turn) == (
        "The GM could not finish this turn: the Claude API stream ended before the reply was "
        "complete (no message_stop). Its narration above is unfinished."
    )
    assert of_turn(events, turn)[-1]["data"]["status"] == "failed"


def test_a_tool_use_in_a_cut_stream_is_not_run_and_the_turn_fails(world, claude, play):
    claude.cut(("text", ["Thorin lunges. "]), attack(world))

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.FAILED
    assert not ToolInvocation.objects.filter(turn=turn).exists()
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7
    assert "its tool call modify_creature was not run" in system_note(turn)


def test_max_tokens_in_the_middle_of_a_tool_call_fails_the_turn_and_runs_nothing(
    world, claude, play
):
    claude.truncate(("text", ["Thorin lunges. "]), attack(world))

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.FAILED
    assert not ToolInvocation.objects.filter(turn=turn).exists()
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7
    assert "hit the max_tokens limit" in system_note(turn)
    assert "modify_creature was not run" in system_note(turn)


def test_narration_cut_by_max_tokens_fails_the_turn_rather_than_completing_it(world, claude, play):
    claude.truncate(("text", ["The goblin raises its blade and"]))

    turn = play("I look at the goblin.")

    assert turn.status == Turn.Status.FAILED
    assert system_note(turn) == (
        "The GM could not finish this turn: the model's reply hit the max_tokens limit (1024). "
        "Its narration above is unfinished."
    )


def test_a_tcp_reset_mid_stream_is_reported_as_a_provider_error(world, claude, play):
    claude.reset(("text", ["The goblin "]))

    turn = play("I look at the goblin.")

    assert turn.status == Turn.Status.FAILED
    note = system_note(turn)
    # The reset reaches the client as ReadError (RST) or RemoteProtocolError (body cut).
    assert re.search(
        r"the connection to the Claude API broke mid-stream \((ReadError|RemoteProtocolError): ",
        note,
    )
    assert "internal error" not in note


def test_a_cut_after_a_finished_tool_round_keeps_that_call_undoable(world, claude, play):
    claude.reply(("text", ["Thorin lunges. "]), attack(world))
    claude.cut(("text", ["The goblin "]))

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.FAILED
    assert ToolInvocation.objects.get(turn=turn).status == ToolInvocation.Status.COMMITTED
    assert system_note(turn).endswith(
        "Its narration above is unfinished. Its tool calls so far are in the log and can be undone."
    )
