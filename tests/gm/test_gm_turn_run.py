"""The turn runner: a turn always ends, failures say why, and an undone turn stays undone."""

import pytest
from django.db import OperationalError, transaction

from audit.models import ToolInvocation
from audit.services import turn_undo
from campaigns.models import ChatMessage, Turn
from core.errors import Conflict
from gm.base import GMError, Session
from gm.services import gm_turn_run
from tests.gm.conftest import Provider, of_turn


def messages(turn):
    return list(ChatMessage.objects.filter(turn=turn).values_list("role", "content", "reverted"))


def damage_goblin(session: Session, tool_use_id: str = "use-1"):
    return session.call_tool(
        "modify_creature",
        {"creature_id": session.context.state["creatures"][2]["id"], "hp_delta": -2},
        model="test/gm-1",
        tool_use_id=tool_use_id,
    )


def test_narration_in_small_pieces_streams_as_coalesced_deltas(world, play, events):
    sentence = "The torches gutter as something large moves in the dark below you."
    words = sentence.split(" ")

    turn = play("I listen.", provider=Provider(lambda s: [s.say(w + " ") for w in words]))

    deltas = [e["data"]["text"] for e in of_turn(events, turn) if e["type"] == "gm_text_delta"]
    assert 1 < len(deltas) < len(words)
    assert "".join(deltas) == sentence + " "
    assert messages(turn)[-1] == ("gm", sentence, False)


def test_a_provider_crash_fails_the_turn_with_a_system_message(world, play, events):
    def crash(session):
        session.say("You open the door and")
        raise KeyError("boom")

    turn = play("I open the door.", provider=Provider(crash))

    assert turn.status == Turn.Status.FAILED
    assert messages(turn)[1:] == [
        ("gm", "You open the door and", False),
        (
            "system",
            "The GM could not finish this turn: the GM ran into an internal error (KeyError). "
            "Its narration above is unfinished.",
            False,
        ),
    ]
    completed = of_turn(events, turn)[-1]
    assert completed["type"] == "gm_turn_completed"
    assert completed["source"] == "system"
    assert completed["data"]["status"] == "failed"
    assert completed["data"]["error"] == "the GM ran into an internal error (KeyError)."


def test_an_outage_mid_turn_is_named_as_one_not_as_an_internal_error(world, play, events):
    def connection_lost(session):
        session.say("The ceiling")
        raise OperationalError("server closed the connection unexpectedly")

    turn = play("I look up.", provider=Provider(connection_lost))

    assert turn.status == Turn.Status.FAILED
    reason = "the game's database or live feed was unavailable; try again in a moment."
    assert of_turn(events, turn)[-1]["data"]["error"] == reason
    assert messages(turn)[-1][1].startswith(f"The GM could not finish this turn: {reason}")


def test_a_failure_after_a_tool_call_keeps_the_call_and_says_it_can_be_undone(world, play):
    def damage_then_fail(session):
        assert damage_goblin(session).ok
        raise GMError("the model went quiet.")

    turn = play("I attack the goblin.", provider=Provider(damage_then_fail))

    assert turn.status == Turn.Status.FAILED
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert (row.status, row.model) == ("committed", "test/gm-1")
    assert messages(turn)[-1][1] == (
        "The GM could not finish this turn: the model went quiet. Its tool calls so far are in "
        "the log and can be undone."
    )


def test_an_unknown_provider_setting_fails_the_turn_clearly(world, play, settings):
    settings.GM_PROVIDER = "oracle"
    turn = play("Hello?")
    assert turn.status == Turn.Status.FAILED
    assert "unknown GM provider 'oracle'" in messages(turn)[-1][1]


def test_the_anthropic_provider_without_an_api_key_fails_the_turn_clearly(world, play, settings):
    settings.GM_PROVIDER = "anthropic"
    settings.ANTHROPIC_API_KEY = ""
    turn = play("Hello?")
    assert turn.status == Turn.Status.FAILED
    assert "needs ANTHROPIC_API_KEY" in messages(turn)[-1][1]


def test_the_scripted_gm_is_the_default(world, play, settings):
    assert settings.GM_PROVIDER == "scripted"
    turn = play("I attack the goblin")
    assert ToolInvocation.objects.get(turn=turn).model == "scripted/1"


def test_a_turn_is_answered_once(world, play):
    turn = play("I wait.")
    with pytest.raises(Conflict):
        gm_turn_run(turn=turn)


def test_a_turn_undone_while_the_gm_speaks_stops_at_its_next_step(world, play, events):
    reached = []

    def undone_midway(session):
        assert damage_goblin(session).ok
        turn_undo(campaign_id=world.campaign.pk, turn_id=session.context.turn.pk, user=world.player)
        session.say("The goblin reels.")
        reached.append("before the next call")
        damage_goblin(session, tool_use_id="use-2")
        reached.append("after the next call")

    turn = play("I attack the goblin.", provider=Provider(undone_midway))

    assert reached == ["before the next call"]
    assert turn.status == Turn.Status.CANCELLED
    assert [r.status for r in ToolInvocation.objects.filter(turn=turn)] == ["reverted"]
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7
    assert messages(turn) == [
        ("player", "I attack the goblin.", True),
        ("gm", "The goblin reels.", True),
    ]
    assert [e["type"] for e in of_turn(events, turn)].count("message_created") == 1  # the player's
    assert of_turn(events, turn)[-1]["data"]["status"] == "cancelled"


def test_read_tools_run_without_an_audit_row(world, play):
    seen = []

    def look(session):
        asked = [("get_state", {}), ("roll_dice", {"expression": "2d6"})]
        for i, (name, input) in enumerate([*asked, ("roll_dice", {"expression": 7})]):
            seen.append(session.call_tool(name, input, model="test/gm-1", tool_use_id=f"use-{i}"))

    turn = play("What do I see?", provider=Provider(look))

    state, dice, bad = seen
    assert state.ok and state.content["campaign"]["name"] == "The Sunken Keep"
    assert dice.ok and 2 <= dice.content["total"] <= 12
    assert not bad.ok and bad.content["error"].startswith("Invalid input")
    assert not ToolInvocation.objects.filter(turn=turn).exists()


def test_an_unknown_tool_is_an_error_for_the_model_not_a_crash(world, play):
    seen = []
    turn = play(
        "Cast fireball.",
        provider=Provider(
            lambda s: seen.append(s.call_tool("fireball", {}, model="m", tool_use_id="use-1"))
        ),
    )
    assert turn.status == Turn.Status.COMPLETED
    assert seen[0].content == {"error": "Unknown tool 'fireball'.", "status": "failed"}
    row = ToolInvocation.objects.get(turn=turn)  # logged like any refused call (a failed row)
    assert (row.tool_name, row.tool_tier, row.status) == ("fireball", "", "failed")


def test_the_gm_refuses_to_run_inside_another_transaction(world):
    turn = world.turn(message="I open the door.")
    ran = []
    with pytest.raises(RuntimeError, match="durable"), transaction.atomic():
        gm_turn_run(turn=turn, provider=Provider(ran.append))
    turn.refresh_from_db()
    assert (ran, turn.status) == ([], Turn.Status.OPEN)
    assert messages(turn) == [("player", "I open the door.", False)]
