"""The Claude GM against a local fake of the Messages API: streaming, tool use, failures, and
the context it sends after an undo."""

import json
from unittest.mock import ANY

import pytest

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services import invocation_revert, turn_undo
from campaigns.models import ChatMessage, Turn
from tests.gm.conftest import of_turn
from tests.gm.fake_claude import VERSION

pytestmark = pytest.mark.usefixtures("claude")
MODEL = f"anthropic/{VERSION}"


def reply(turn) -> str:
    return ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.GM).content


def system_note(turn) -> str:
    return ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.SYSTEM).content


def attack(world) -> tuple[str, tuple[str, dict]]:
    return ("tool_use", ("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5}))


def test_streamed_text_deltas_become_gm_text_delta_events(world, claude, play, events):
    chunks = ["The torchlight flickers across ", "the flooded steps, and somewhere ", "below, "]
    claude.reply(("text", [*chunks, "water drips."]))

    turn = play("I look around.")

    assert turn.status == Turn.Status.COMPLETED
    deltas = [e for e in of_turn(events, turn) if e["type"] == "gm_text_delta"]
    # Each streamed chunk leaves as it arrives; short ones are joined to the next.
    assert [d["data"]["text"] for d in deltas] == [*chunks[:2], "below, water drips."]
    assert {d["source"] for d in deltas} == {"ai_tool_execution"}
    assert reply(turn) == "".join(chunks) + "water drips."
    [request] = claude.requests
    assert request["model"] == "claude-gm-test"
    assert request["stream"] is True
    assert request["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "player (plays Thorin): I look around."}],
        }
    ]


def test_the_request_offers_every_registry_tool_with_its_schema(world, claude, play):
    claude.reply(("text", ["Nothing happens."]))
    play("I wait.")
    offered = {tool["name"]: tool for tool in claude.requests[0]["tools"]}
    tools = [*registry.write_tools(), *registry.read_tools()]
    assert set(offered) == {tool.name for tool in tools}
    for tool in tools:
        assert offered[tool.name] == tool.spec()
    assert f"#{world.goblin.pk} Goblin (monster): HP 7/7" in claude.requests[0]["system"]


def test_tool_use_blocks_become_audited_invocations_with_the_model_name(
    world, claude, play, events
):
    claude.reply(("text", ["Thorin lunges. "]), attack(world))
    claude.reply(("text", ["The goblin howls."]))

    turn = play("I attack the goblin.")

    [row] = ToolInvocation.objects.filter(turn=turn)
    assert (row.tool_name, row.status, row.model, row.source) == (
        "modify_creature",
        "committed",
        MODEL,
        "gm",
    )
    assert row.input == {"creature_id": world.goblin.pk, "hp_delta": -5}
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 2
    assert reply(turn) == "Thorin lunges. \n\nThe goblin howls."

    second = claude.requests[1]["messages"]
    assert second[-2] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Thorin lunges. "},
            {"type": "tool_use", "id": "toolu_1_1", "name": "modify_creature", "input": row.input},
        ],
    }
    [result] = second[-1]["content"]
    assert (result["type"], result["tool_use_id"], result["is_error"]) == (
        "tool_result",
        "toolu_1_1",
        False,
    )
    assert json.loads(result["content"])["hp"] == 2
    types = [e["type"] for e in of_turn(events, turn)]
    assert types.index("state_changed") > types.index("gm_text_delta")
    assert of_turn(events, turn)[-1]["data"]["invocations"] == [str(row.pk)]


def test_a_refused_tool_call_goes_back_to_the_model_as_an_error(world, claude, play):
    claude.reply(
        ("tool_use", ("modify_creature", {"creature_id": world.foreign.pk, "hp_delta": -1}))
    )
    claude.reply(("text", ["That creature is not here."]))

    turn = play("I attack the stranger.")

    [row] = ToolInvocation.objects.filter(turn=turn)
    assert (row.status, row.model) == ("failed", MODEL)
    [result] = claude.requests[1]["messages"][-1]["content"]
    assert result["is_error"] is True
    assert "No creature with id" in json.loads(result["content"])["error"]
    assert turn.status == Turn.Status.COMPLETED


def test_read_tools_answer_the_model_without_an_audit_row(world, claude, play):
    claude.reply(("tool_use", ("get_state", {})))
    claude.reply(("text", ["You count four figures."]))

    turn = play("How many are we?")

    assert not ToolInvocation.objects.filter(turn=turn).exists()
    [result] = claude.requests[1]["messages"][-1]["content"]
    assert len(json.loads(result["content"])["creatures"]) == 4


def test_an_api_error_ends_the_turn_with_a_clear_system_message(world, claude, play, events):
    claude.fail(529, "overloaded_error", "Overloaded")

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.FAILED
    assert system_note(turn) == (
        "The GM could not finish this turn: the Claude API reported 529 overloaded_error: "
        "Overloaded."
    )
    assert of_turn(events, turn)[-1]["data"]["status"] == "failed"


def test_an_error_in_the_middle_of_the_stream_keeps_what_was_said(world, claude, play):
    claude.reply(("text", ["Thorin lunges. "]), attack(world))
    claude.fail_mid_stream(["The goblin "], "overloaded_error", "Overloaded")

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.FAILED
    assert reply(turn) == "Thorin lunges. \n\nThe goblin"
    assert system_note(turn) == (
        "The GM could not finish this turn: the Claude API reported overloaded_error "
        "mid-stream: Overloaded. Its narration above is unfinished. Its tool calls so far are in "
        "the log and can be undone."
    )
    assert ToolInvocation.objects.get(turn=turn).status == "committed"


def test_an_unreachable_api_ends_the_turn_cleanly(world, claude, play, settings):
    claude.stop()
    turn = play("Hello?")
    assert turn.status == Turn.Status.FAILED
    assert "could not be reached" in system_note(turn)


def test_a_model_that_never_stops_calling_tools_is_stopped(world, claude, play):
    for _ in range(8):
        claude.reply(("tool_use", ("roll_dice", {"expression": "1d20"})))

    turn = play("I keep rolling.")

    assert turn.status == Turn.Status.FAILED
    assert "still calling tools after 8 rounds" in system_note(turn)


def test_after_an_undo_the_model_sees_neither_the_undone_turn_nor_its_tool_calls(
    world, claude, play
):
    claude.reply(("tool_use", ("set_scene", {"description": "A flooded crypt."})))
    claude.reply(("text", ["Water laps at the stairs."]))
    kept = play("We go down into the crypt.")
    claude.reply(("text", ["You swing at the goblin. "]), attack(world))
    claude.reply(("text", ["The goblin staggers, bleeding."]))
    undone = play("I attack the goblin.")
    turn_undo(
        campaign_id=world.campaign.pk, turn_id=undone.pk, user=world.owner, reason="wrong target"
    )
    claude.reply(("text", ["The goblin glares, unhurt."]))

    play("How does the goblin look?")

    request = claude.requests[-1]
    sent = json.dumps(request["messages"])
    assert "I attack the goblin." not in sent
    assert "staggers" not in sent and "swing at the goblin" not in sent
    assert "modify_creature" not in sent
    kept_call = ToolInvocation.objects.get(turn=kept)
    assert request["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "player (plays Thorin): We go down into the crypt."}
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_" + kept_call.pk.hex,
                    "name": "set_scene",
                    "input": {"description": "A flooded crypt."},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_" + kept_call.pk.hex,
                    "content": json.dumps(kept_call.result, sort_keys=True),
                }
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Water laps at the stairs."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "player (plays Thorin): How does the goblin look?"}
            ],
        },
    ]
    assert (
        'owner undid the turn of player (plays Thorin) ("I attack the goblin."; '
        'modify_creature), reason: "wrong target". Everything it did was reverted: it never '
        "happened." in request["system"]
    )
    assert f"#{world.goblin.pk} Goblin (monster): HP 7/7" in request["system"]


def test_a_single_reverted_call_is_left_out_and_noted(world, claude, play):
    claude.reply(
        ("text", ["You strike and step back. "]),
        attack(world),
        ("tool_use", ("move_token", {"creature_id": world.hero.pk, "x": 2, "y": 2})),
    )
    claude.reply(("text", ["The goblin snarls."]))
    turn = play("I attack the goblin and step back.")
    damage = ToolInvocation.objects.get(turn=turn, tool_name="modify_creature")
    invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=damage.pk, user=world.cogm, reason="missed"
    )
    claude.reply(("text", ["Still here."]))

    play("And now?")

    request = claude.requests[-1]
    names = [
        block["name"]
        for message in request["messages"]
        for block in message["content"]
        if block["type"] == "tool_use"
    ]
    assert names == ["move_token"]
    assert (
        f"cogm reverted the modify_creature call (creature {world.goblin.pk}: HP -5) of the turn "
        'of player (plays Thorin) ("I attack the goblin and step back."), reason: "missed". '
        "Its effect is gone." in request["system"]
    )


def test_a_whitespace_only_text_block_is_not_sent_back(world, claude, play):
    claude.reply(("text", ["\n\n"]), attack(world))
    claude.reply(("text", ["The goblin howls."]))

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.COMPLETED
    assert claude.requests[1]["messages"][-2]["content"] == [
        {"type": "tool_use", "id": "toolu_1_1", "name": "modify_creature", "input": ANY}
    ]
