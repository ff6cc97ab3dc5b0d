"""The fake Messages API itself: it refuses what the real API refuses, in the real error shape,
and streams (or fails to stream) the way the real API does. These keep the fake from quietly
becoming lenient, which would let the Claude tests pass against requests the API refuses."""

import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from tests.gm.fake_claude import FakeClaude
from tests.gm.messages_api import Refused, check_request

TOOL = {
    "name": "roll_dice",
    "description": "Roll dice.",
    "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}}},
}
USE = {"type": "tool_use", "id": "toolu_01", "name": "roll_dice", "input": {"expression": "1d6"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "4"}
VALID = {
    "model": "claude-gm-test",
    "max_tokens": 100,
    "stream": True,
    "system": "You are the GM.",
    "tools": [TOOL],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "alice: I roll."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Rolling."}, USE]},
        {"role": "user", "content": [RESULT, {"type": "text", "text": "bob: And I watch."}]},
    ],
}


def changed(edit) -> dict[str, Any]:
    body = copy.deepcopy(VALID)
    edit(body)
    return body


def test_a_valid_request_passes():
    check_request(VALID)


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda b: b.pop("model"), "model: Field required"),
        (lambda b: b.pop("max_tokens"), "max_tokens: Field required"),
        (lambda b: b.pop("messages"), "messages: Field required"),
        (lambda b: b.update(temperature_x=1), "temperature_x: Extra inputs are not permitted"),
        (lambda b: b.update(system=7), "system: Input should be a valid string"),
        (lambda b: b.update(system=[{"type": "text", "text": ""}]), "must be non-empty"),
        (
            lambda b: b["tools"][0]["input_schema"].update(anyOf=[{"required": ["expression"]}]),
            "tools.0.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf",
        ),
        (lambda b: b["tools"][0].update(name="roll dice"), "tools.0.custom.name: String should"),
        (lambda b: b["tools"].append(TOOL), "tools: Tool names must be unique."),
        (
            lambda b: b["messages"][2]["content"].reverse(),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately",
        ),
        (
            lambda b: b["messages"][2]["content"].pop(0),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately",
        ),
        (
            lambda b: b["messages"][2]["content"][0].update(tool_use_id="toolu_99"),
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks",
        ),
        (
            lambda b: b["messages"][0]["content"].insert(0, RESULT),
            "messages.0.content.0: unexpected `tool_use_id`",
        ),
        (lambda b: b.pop("tools"), "must define tools"),
        (
            lambda b: b["messages"][1]["content"].append(dict(USE)),
            "`tool_use` ids must be unique",
        ),
        (lambda b: b["messages"][1]["content"][1].update(id="toolu 1"), "tool_use.id: String"),
        (
            lambda b: b["messages"].insert(1, {"role": "user", "content": "I roll again."}),
            'messages.1: roles must alternate between "user" and "assistant"',
        ),
        (
            lambda b: b["messages"].insert(0, {"role": "assistant", "content": "Hello."}),
            'first message must use the "user" role',
        ),
        (lambda b: b["messages"].pop(), "must end with a user message"),
        (
            lambda b: b["messages"][0]["content"].append({"type": "text", "text": ""}),
            "messages: text content blocks must be non-empty",
        ),
        (
            lambda b: b["messages"][0].update(content=" \n"),
            "messages: text content blocks must contain non-whitespace text",
        ),
        (lambda b: b["messages"][0].update(content=[]), "messages.0: all messages must have"),
        (lambda b: b["messages"][0].update(name="alice"), "a message is exactly {role, content}"),
        (lambda b: b["messages"][0]["content"].append(USE), "is not allowed in this message"),
    ],
)
def test_the_fake_refuses_what_the_api_refuses(edit, message):
    with pytest.raises(Refused) as refused:
        check_request(changed(edit))
    assert message in str(refused.value)


@pytest.fixture
def fake() -> Iterator[FakeClaude]:
    fake = FakeClaude()
    fake.start()
    yield fake
    fake.stop()


def client(fake: FakeClaude) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="k", base_url=fake.url, max_retries=0)


def test_a_refusal_comes_as_the_apis_400_error_body(fake):
    with pytest.raises(anthropic.BadRequestError) as refused:
        client(fake).messages.create(**changed(lambda b: b.pop("stream")) | {"max_tokens": 0})
    body = refused.value.body
    assert refused.value.status_code == 400
    assert body["type"] == "error"
    assert body["error"] == {
        "type": "invalid_request_error",
        "message": "max_tokens: Input should be greater than or equal to 1",
    }
    assert body["request_id"].startswith("req_")
    assert fake.refusals == [body["error"]]


def events(fake: FakeClaude) -> list[tuple[str, dict[str, Any]]]:
    """The raw server-sent events of one streamed request, as (event name, data)."""
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    response = httpx2.post(f"{fake.url}/v1/messages", json=VALID, headers=headers)
    blocks = [b for b in response.text.split("\n\n") if b.strip()]
    parsed = [dict(line.split(": ", 1) for line in block.split("\n")) for block in blocks]
    return [(e["event"], json.loads(e["data"])) for e in parsed]


def test_a_reply_streams_the_documented_event_sequence(fake):
    fake.reply(("text", ["Roll", "ing."]), ("tool_use", ("roll_dice", {"expression": "2d6"})))

    sent = events(fake)

    assert [name for name, _ in sent] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in sent)
    tool_json = "".join(d["delta"]["partial_json"] for n, d in sent[7:9])
    assert {d["delta"]["type"] for _, d in sent[7:9]} == {"input_json_delta"}
    assert json.loads(tool_json) == {"expression": "2d6"}
    assert sent[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_a_cut_stream_ends_without_message_delta_or_message_stop(fake):
    fake.cut(("text", ["Roll"]))
    names = [name for name, _ in events(fake)]
    assert names[-1] == "content_block_stop"
    assert "message_delta" not in names and "message_stop" not in names


def test_max_tokens_stops_a_tool_call_half_way(fake):
    fake.truncate(("tool_use", ("roll_dice", {"expression": "2d6"})))
    sent = events(fake)
    partial = "".join(d["delta"]["partial_json"] for n, d in sent if n == "content_block_delta")
    with pytest.raises(ValueError):
        json.loads(partial)
    assert sent[-2][1]["delta"]["stop_reason"] == "max_tokens"


def test_a_reset_breaks_the_connection_mid_body(fake):
    fake.reset(("text", ["Roll"]))
    with pytest.raises(httpx2.TransportError):
        events(fake)


def test_an_error_event_ends_a_stream_that_began_with_200(fake):
    fake.fail_mid_stream(["Roll"], "overloaded_error", "Overloaded")
    name, data = events(fake)[-1]
    assert (name, data["error"]) == ("error", {"type": "overloaded_error", "message": "Overloaded"})


def test_an_overloaded_api_answers_529(fake):
    fake.fail(529, "overloaded_error", "Overloaded")
    stream = client(fake).messages.stream(**changed(lambda b: b.pop("stream")))
    with pytest.raises(anthropic.APIStatusError) as failed, stream:
        pass
    assert failed.value.status_code == 529
    assert failed.value.body["error"]["type"] == "overloaded_error"
