"""What the Claude GM is told about turns that did not end well, as the strict fake received it.

A failed turn's player message is never sent again as a message to answer, never merged with
another player's message into one action, and its partial narration is never replayed as a
GM reply. The system prompt says what happened instead (and which of its tool calls stay in
effect), as it does for undone turns.
"""

import json

import pytest

from campaigns.models import Turn

pytestmark = pytest.mark.usefixtures("claude")
AXE = "I attack the goblin with my axe!"


def attack(world) -> tuple[str, tuple[str, dict]]:
    return ("tool_use", ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5}))


def player_texts(request) -> list[list[str]]:
    """Per user message, the player lines in it (text blocks; tool results left aside)."""
    return [
        [block["text"] for block in message["content"] if block["type"] == "text"]
        for message in request["messages"]
        if message["role"] == "user"
    ]


def test_a_failed_turn_is_left_out_and_never_merged_with_the_retry(world, claude, play):
    claude.cut(("text", ["You swing your axe and "]))
    failed = play(AXE)
    assert failed.status == Turn.Status.FAILED
    claude.reply(("text", ["The goblin ducks under your axe."]))

    play(AXE)

    request = claude.requests[-1]
    assert player_texts(request) == [[f"player (plays Thorin): {AXE}"]]
    assert "You swing your axe" not in json.dumps(request)
    assert (
        f'The turn of player (plays Thorin) ("{AXE}") failed before the GM finished it: it '
        "is over, never act on it again." in request["system"]
    )


def test_a_failed_turn_after_a_tool_call_says_the_call_stays_in_effect(world, claude, play):
    claude.reply(("text", ["Your axe bites. "]), attack(world))
    claude.cut(("text", ["The goblin "]))
    play(AXE)
    claude.reply(("text", ["The goblin, bleeding, backs away."]))

    play("How does the goblin look?")

    request = claude.requests[-1]
    assert player_texts(request) == [["player (plays Thorin): How does the goblin look?"]]
    assert "tool_use" not in json.dumps(request["messages"])
    assert (
        f"Its tool calls that ran stay in effect: modify_creature (creature {world.goblin.pk}: "
        "HP -5)." in request["system"]
    )
    assert f"#{world.goblin.pk} Goblin (monster): HP 2/7" in request["system"]


def test_unanswered_turns_are_noted_not_sent_as_one_message(world, claude, play):
    world.turn(message="We whisper about the map.")
    world.turn(actor=world.owner, message="The torches burn low.")
    claude.reply(("text", ["You hear water below."]))

    play("I listen.")

    request = claude.requests[-1]
    assert player_texts(request) == [["player (plays Thorin): I listen."]]
    assert (
        'player (plays Thorin) said "We whisper about the map." (the GM was not asked to'
        in (request["system"])
    )
    assert 'owner said "The torches burn low."' in request["system"]


def test_answered_turns_stay_one_exchange_each(world, claude, play):
    claude.reply(("text", ["You see a flooded crypt."]))
    play("I look around.")
    claude.reply(attack(world))
    claude.reply(("text", ["The goblin reels."]))
    play(AXE)
    claude.reply(("text", ["It glares at you."]))

    play("And now?")

    request = claude.requests[-1]
    assert player_texts(request) == [
        ["player (plays Thorin): I look around."],
        [f"player (plays Thorin): {AXE}"],
        [],
        ["player (plays Thorin): And now?"],
    ]
    assert [m["role"] for m in request["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
