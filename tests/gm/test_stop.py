"""Stop means stop: a cancel hangs up the model's stream mid-sentence, whatever the provider.

A slow strict fake streams a long reply (text, then a tool call at its end); after a few chunks
the player presses Stop, and the model falls silent mid-sentence (thinking) for longer than any
test runs. The runner's stop watch hangs the stream up: the fake sees the connection closed
during that silence, before it sent another chunk, the turn ends `cancelled` keeping what was said
and saying it was stopped, the unfinished message's tool call never runs, and calls committed
in earlier rounds stay in the log, undoable. Committed data only: the watch reads the turn from
a thread of its own (`django_db(transaction=True)`).
"""

from collections.abc import Callable

import pytest
from django.db import connections

from audit.models import ToolInvocation
from audit.services import invocation_revert
from campaigns.models import ChatMessage, Turn
from gm.services import turn_cancel
from tests.conftest import dump
from tests.gm.fake_openai import call

pytestmark = pytest.mark.django_db(transaction=True)
CHUNKS = [f"word{n} " for n in range(400)]  # 400 chunks, 0.05 s apart: a 20 s sentence
PACE = 0.05
CANCEL_AFTER = 3
STALL = 30.0  # the silence after Stop: the turn must end inside it ...
TIMEOUT = 120.0  # ... and not by the client's read timeout, which is longer


@pytest.fixture(autouse=True)
def patient_clients(settings) -> None:
    settings.ANTHROPIC_TIMEOUT = TIMEOUT
    settings.OPENAI_TIMEOUT = TIMEOUT


def pressing_stop(world) -> Callable[[], None]:
    """The player presses Stop on the turn being answered (from the fake's thread)."""

    def press() -> None:
        try:
            turn = Turn.objects.filter(campaign=world.campaign).latest("pk")
            turn_cancel(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
        finally:
            connections.close_all()

    return press


def attack(world) -> tuple[str, tuple[str, dict]]:
    return ("tool_use", ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5}))


def test_stop_hangs_up_a_long_claude_stream_mid_sentence(world, claude, play):
    before = dump(world.campaign)
    claude.slow(
        ("text", CHUNKS),
        attack(world),
        pace=PACE,
        hook=(CANCEL_AFTER, pressing_stop(world)),
        stall=STALL,
    )

    turn = play("I tell the goblin my life story.")

    assert claude.hung_up.wait(5), "the client never closed the stream"
    assert claude.sent == CANCEL_AFTER  # ended in the silence, before the fake's next chunk
    assert turn.status == Turn.Status.CANCELLED
    gm = ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.GM).content
    assert gm.startswith("".join(CHUNKS[:CANCEL_AFTER]).strip())
    assert len(gm.split()) < len(CHUNKS)
    note = ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.SYSTEM).content
    assert note == "player stopped the GM on this turn. Its narration above is unfinished."
    assert not ToolInvocation.objects.filter(turn=turn).exists()
    assert dump(world.campaign) == before  # nothing of the unfinished message was applied
    assert len(claude.requests) == 1


def test_stop_keeps_the_calls_of_finished_rounds_undoable(world, claude, play):
    claude.reply(("text", ["Thorin lunges. "]), attack(world))
    claude.slow(
        ("text", CHUNKS),
        attack(world),
        pace=PACE,
        hook=(CANCEL_AFTER, pressing_stop(world)),
        stall=STALL,
    )

    turn = play("I attack the goblin, then keep talking.")

    assert claude.hung_up.wait(5)
    assert turn.status == Turn.Status.CANCELLED
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert row.status == ToolInvocation.Status.COMMITTED
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 2  # the first round's hit, not the unfinished second one
    note = ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.SYSTEM).content
    assert note.endswith("Its tool calls so far are in the log and can be undone.")
    invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7


def hit(world):
    return call("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5})


def test_stop_hangs_up_a_long_openai_compatible_stream_mid_sentence(world, openai_server, play):
    before = dump(world.campaign)
    press = (CANCEL_AFTER, pressing_stop(world))
    openai_server.reply(*CHUNKS, calls=[hit(world)], pace=PACE, hook=press, stall=STALL)

    turn = play("I tell the goblin my life story.")

    assert openai_server.hung_up.wait(5), "the client never closed the stream"
    assert openai_server.sent == CANCEL_AFTER  # ended in the silence, before the next chunk
    assert turn.status == Turn.Status.CANCELLED
    gm = ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.GM).content
    assert gm == "".join(CHUNKS[:CANCEL_AFTER]).strip()
    note = ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.SYSTEM).content
    assert note == "player stopped the GM on this turn. Its narration above is unfinished."
    assert not ToolInvocation.objects.filter(turn=turn).exists()
    assert dump(world.campaign) == before
    assert len(openai_server.requests) == 1


def test_stop_keeps_the_openai_calls_of_finished_rounds_undoable(world, openai_server, play):
    press = (CANCEL_AFTER, pressing_stop(world))
    openai_server.reply("Thorin lunges. ", calls=[hit(world)])
    openai_server.reply(*CHUNKS, calls=[hit(world)], pace=PACE, hook=press, stall=STALL)

    turn = play("I attack the goblin, then keep talking.")

    assert openai_server.hung_up.wait(5)
    assert turn.status == Turn.Status.CANCELLED
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert row.status == ToolInvocation.Status.COMMITTED
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 2
    invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7
