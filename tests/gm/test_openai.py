"""The OpenAI-compatible GM against a strict local fake of the Chat Completions API: streaming,
tool calls through the audited dispatch, the replies that must fail a turn, the quirks of real
servers, schemas in the forms servers take, resume from the transcript, approval.

The `openai_server` fixture fails any test whose client sent a request the API refuses."""

import json

import pytest

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services.approval import invocation_approve
from campaigns.models import Campaign, ChatMessage, Creature, Turn
from gm.models import GMRound
from gm.tasks import turn_watch
from tests.conftest import dump
from tests.gm.chat_api import check_parameters
from tests.gm.conftest import of_turn
from tests.gm.fake_openai import VERSION, call
from tests.gm.test_resume import crash_once, lease_runs_out, run_until_crash, submit

pytestmark = pytest.mark.usefixtures("openai_server")
MODEL = f"openai/{VERSION}"


def reply(turn) -> str:
    return ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.GM).content


def system_note(turn) -> str:
    return ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.SYSTEM).content


def hit(world, **extra):
    return call("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5, **extra})


def step(world):
    return call("move_token", {"creature_id": world.hero.pk, "x": 3, "y": 4})


def rows(turn):
    found = ToolInvocation.objects.filter(turn=turn).order_by("sequence")
    return list(found.values_list("tool_name", "status"))


def tool_messages(request) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


# Streaming and the request


def test_narration_streams_to_the_table_and_the_request_is_plain_chat_completions(
    world, openai_server, play, events
):
    chunks = ["The torchlight flickers across ", "the flooded steps, and somewhere ", "below, "]
    openai_server.reply(*chunks, "water drips.")

    turn = play("I look around.")

    assert turn.status == Turn.Status.COMPLETED
    deltas = [e["data"]["text"] for e in of_turn(events, turn) if e["type"] == "gm_text_delta"]
    assert deltas == [*chunks[:2], "below, water drips."]
    assert reply(turn) == "".join(chunks) + "water drips."
    [request] = openai_server.requests
    assert request["model"] == "gpt-gm-test" and request["stream"] is True
    assert request["max_tokens"] == 1024  # a local server: not OpenAI's max_completion_tokens
    assert "tool_choice" not in request  # never unless configured
    system, user = request["messages"]
    assert system["role"] == "system" and f"#{world.goblin.pk} Goblin" in system["content"]
    assert user == {"role": "user", "content": "player (plays Thorin): I look around."}
    assert of_turn(events, turn)[-1]["data"]["model"] == "openai/gpt-gm-test"


def test_every_registry_tool_is_offered_as_a_function_the_api_accepts(world, openai_server, play):
    openai_server.reply("Nothing happens.")
    play("I wait.")
    offered = {t["function"]["name"]: t["function"] for t in openai_server.requests[0]["tools"]}
    assert set(offered) == {t.name for t in [*registry.write_tools(), *registry.read_tools()]}
    cells = offered["reveal_fog"]["parameters"]["properties"]["cells"]["items"]
    assert cells["items"] == {"type": "integer", "minimum": 0, "maximum": 1000}
    assert (cells["minItems"], cells["maxItems"]) == (2, 2)
    assert not any(f.get("strict") for f in offered.values())  # a local server: not strict


# Tool calls


def test_a_tool_call_runs_through_the_audited_dispatch_and_its_result_goes_back_by_id(
    world, openai_server, play
):
    openai_server.reply("Thorin lunges. ", calls=[hit(world)])
    openai_server.reply("The goblin howls.")

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.COMPLETED
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert (row.tool_name, row.status, row.model, row.source) == (
        "modify_creature",
        "committed",
        MODEL,
        "gm",
    )
    assert row.tool_use_id == "call_fake1x0"
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 2
    second = openai_server.requests[1]["messages"]
    assistant, tool = second[-2], second[-1]
    assert assistant["role"] == "assistant" and assistant["content"] == "Thorin lunges. "
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_fake1x0"]
    assert tool["tool_call_id"] == "call_fake1x0" and json.loads(tool["content"])["hp"] == 2
    assert reply(turn) == "Thorin lunges. \n\nThe goblin howls."


def test_the_configured_model_names_the_row_when_the_server_reports_none(
    world, openai_server, play
):
    openai_server.reply(calls=[hit(world)], model="")
    openai_server.reply("Done.", model="")
    turn = play("I attack the goblin.")
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert row.model == "openai/gpt-gm-test"


def test_arguments_that_are_not_json_leave_a_failed_row_and_the_model_is_told_why(
    world, openai_server, play
):
    openai_server.reply(calls=[call("modify_creature", '{"creature_id": 1, "hp_delta": -5')])
    openai_server.reply("The goblin laughs.")

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.COMPLETED
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert row.status == "failed" and row.error.startswith("Invalid input")
    [told] = tool_messages(openai_server.requests[1])
    assert "not valid JSON" in json.loads(told["content"])["error"]
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 7


def test_schema_invalid_arguments_leave_a_failed_row_and_a_tool_message_saying_why(
    world, openai_server, play
):
    openai_server.reply(calls=[call("modify_creature", {"creature_id": world.goblin.pk, "hp": 3})])
    openai_server.reply("Hm.")

    turn = play("I attack the goblin.")

    [row] = ToolInvocation.objects.filter(turn=turn)
    assert row.status == "failed" and "Additional properties" in row.error
    [told] = tool_messages(openai_server.requests[1])
    assert "Additional properties" in json.loads(told["content"])["error"]


# Replies that must fail the turn


def test_a_stream_without_a_finish_reason_fails_the_turn_and_runs_none_of_its_calls(
    world, openai_server, play
):
    before = dump(world.campaign)
    openai_server.reply("Thorin lunges. ", calls=[hit(world)], ending="cut")

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.FAILED
    assert not ToolInvocation.objects.filter(turn=turn).exists()
    assert dump(world.campaign) == before
    assert system_note(turn) == (
        "The GM could not finish this turn: the model server's stream ended before the reply "
        "was complete (no finish_reason); its tool call modify_creature was not run. Its "
        "narration above is unfinished."
    )
    assert not GMRound.objects.filter(turn=turn).exists()


def test_a_reply_stopped_at_length_fails_the_turn_and_runs_none_of_its_calls(
    world, openai_server, play
):
    openai_server.reply("Thorin lunges. ", calls=[step(world), hit(world)], ending="length")

    turn = play("I step in and attack.")

    assert turn.status == Turn.Status.FAILED
    assert not ToolInvocation.objects.filter(turn=turn).exists()
    assert (
        "hit the max_tokens limit (1024); its tool calls move_token, modify_creature were not run"
        in system_note(turn)
    )


def test_an_http_error_fails_the_turn_with_the_servers_message(world, openai_server, play):
    openai_server.fail(503, "model is loading")
    turn = play("I wait.")
    assert turn.status == Turn.Status.FAILED
    assert system_note(turn) == (
        "The GM could not finish this turn: the model server answered 503: model is loading."
    )


# Real servers' quirks


def test_parallel_calls_all_at_index_0_are_told_apart_by_their_ids(world, openai_server, play):
    openai_server.reply(calls=[hit(world), step(world)], variant="index0")
    openai_server.reply("Done.")

    turn = play("I attack and move.")

    assert rows(turn) == [("modify_creature", "committed"), ("move_token", "committed")]
    world.goblin.refresh_from_db()
    world.hero.refresh_from_db()
    assert (world.goblin.hp, world.hero.x, world.hero.y) == (2, 3, 4)
    assert [m["tool_call_id"] for m in tool_messages(openai_server.requests[1])] == [
        "call_fake1x0",
        "call_fake1x1",
    ]


def test_arguments_that_arrive_whole_in_one_delta(world, openai_server, play):
    openai_server.reply(calls=[hit(world), step(world)], variant="whole")
    openai_server.reply("Done.")
    turn = play("I attack and move.")
    assert rows(turn) == [("modify_creature", "committed"), ("move_token", "committed")]


def test_arguments_repeated_whole_after_streaming_are_taken_once(world, openai_server, play):
    openai_server.reply(calls=[hit(world)], variant="repeat")
    openai_server.reply("Done.")
    turn = play("I attack.")
    assert rows(turn) == [("modify_creature", "committed")]
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 2


def test_a_server_that_answers_stop_with_tool_calls_still_has_them_run(world, openai_server, play):
    openai_server.reply(calls=[hit(world)], finish_reason="stop")  # older Ollama
    openai_server.reply("Done.")
    turn = play("I attack.")
    assert rows(turn) == [("modify_creature", "committed")]


@pytest.mark.parametrize(
    "written",
    [
        '{"name": "modify_creature", "arguments": {"creature_id": GOBLIN, "hp_delta": -5}}',
        '```json\n{"name": "modify_creature", "parameters": {"creature_id": GOBLIN, '
        '"hp_delta": -5}}\n```',
    ],
)
def test_a_call_written_as_json_text_is_run_and_not_narrated(
    world, openai_server, play, events, written
):
    text = written.replace("GOBLIN", str(world.goblin.pk))
    openai_server.reply(text[:20], text[20:])
    openai_server.reply("The goblin staggers.")

    turn = play("I attack.")

    assert rows(turn) == [("modify_creature", "committed")]
    assert reply(turn) == "The goblin staggers."
    said = "".join(e["data"]["text"] for e in of_turn(events, turn) if e["type"] == "gm_text_delta")
    assert "modify_creature" not in said
    assistant = openai_server.requests[1]["messages"][-2]
    assert assistant["content"] is None and len(assistant["tool_calls"]) == 1


def test_json_text_that_names_no_tool_is_narration(world, openai_server, play):
    openai_server.reply('{"mood": "grim"} The goblin glares.')
    turn = play("I look.")
    assert reply(turn) == '{"mood": "grim"} The goblin glares.'
    assert not ToolInvocation.objects.filter(turn=turn).exists()


def test_tool_choice_is_sent_only_when_configured(world, openai_server, play, settings):
    settings.OPENAI_TOOL_CHOICE = "required"
    openai_server.reply(calls=[hit(world)])
    openai_server.reply("Done.")
    play("I attack.")
    assert [r["tool_choice"] for r in openai_server.requests] == ["required", "required"]


# Strict mode


def test_strict_schemas_pass_the_apis_strict_rules_and_optional_nulls_are_dropped(
    world, openai_server, play, settings
):
    settings.OPENAI_STRICT_TOOLS = "on"
    nulls = {"set_hp": None, "temp_hp": None, "add_conditions": None, "death_save": None}
    openai_server.reply(calls=[hit(world, **nulls)])
    openai_server.reply("Done.")

    turn = play("I attack.")

    functions = {t["function"]["name"]: t["function"] for t in openai_server.requests[0]["tools"]}
    strict = {name for name, f in functions.items() if f.get("strict")}
    assert "start_combat" not in strict  # its initiative map has no strict form
    assert {"modify_creature", "reveal_fog", "roll_dice"} <= strict
    for name in strict:  # the fake checked them too; say so here for each
        check_parameters(name, functions[name]["parameters"], strict=True)
    [row] = ToolInvocation.objects.filter(turn=turn)
    assert row.status == "committed"
    assert row.input == {"creature_id": world.goblin.pk, "hp_delta": -5}


def test_a_server_that_refuses_strict_gets_none_under_auto(world, openai_server, play, settings):
    openai_server.refuses_strict = True
    openai_server.reply("Nothing happens.")
    assert play("I wait.").status == Turn.Status.COMPLETED
    settings.OPENAI_STRICT_TOOLS = "on"  # misconfigured: the server's refusal reaches the table
    openai_server.reply("unused")
    turn = play("I wait again.")
    assert turn.status == Turn.Status.FAILED
    assert "does not support 'strict'" in system_note(turn)
    openai_server.refusals.clear()  # that refusal was the point


# Durable rounds and approval


def test_a_turn_resumes_from_its_transcript_without_asking_a_stored_round_again(
    world, openai_server, monkeypatch, run_gm_tasks
):
    openai_server.reply("Thorin lunges ", calls=[hit(world), step(world)])
    openai_server.reply("and the goblin howls.")
    turn = submit(world, "I attack the goblin and step to 3,4.")
    crash_once(monkeypatch, "call_tool", after=True)  # between the two calls of round 0
    run_until_crash(turn)
    lease_runs_out(turn)
    turn_watch(turn_id=turn.pk, attempt=1)
    run_gm_tasks()

    turn.refresh_from_db()
    assert (turn.status, turn.attempts) == (Turn.Status.COMPLETED, 2)
    assert len(openai_server.requests) == 2  # round 0 was not asked again
    assert rows(turn) == [("modify_creature", "committed"), ("move_token", "committed")]
    world.goblin.refresh_from_db()
    assert world.goblin.hp == 2  # hit once
    assert reply(turn) == "Thorin lunges \n\nand the goblin howls."
    assert GMRound.objects.get(turn=turn, index=0).model == MODEL


def test_a_held_call_pauses_the_turn_and_it_continues_once_approved(
    world, openai_server, play, run_gm_tasks, django_capture_on_commit_callbacks
):
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    openai_server.reply("Thorin lunges. ", calls=[hit(world)])
    openai_server.reply("The goblin howls.")

    turn = play("I attack the goblin.")

    assert turn.status == Turn.Status.AWAITING_APPROVAL
    assert len(openai_server.requests) == 1 and Creature.objects.get(pk=world.goblin.pk).hp == 7
    row = ToolInvocation.objects.get(turn=turn, status="awaiting_approval")
    with django_capture_on_commit_callbacks(execute=True):
        invocation_approve(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    run_gm_tasks()
    turn.refresh_from_db()
    assert turn.status == Turn.Status.COMPLETED
    assert Creature.objects.get(pk=world.goblin.pk).hp == 2
    [told] = tool_messages(openai_server.requests[1])
    assert told["tool_call_id"] == "call_fake1x0" and json.loads(told["content"])["hp"] == 2
