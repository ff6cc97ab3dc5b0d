"""The fake Chat Completions server itself: it refuses what the real API refuses, in the real
error shape, and streams (or fails to stream) the way real servers do. These keep the fake from
quietly becoming lenient, which would let the provider tests pass against requests the API
refuses."""

import copy
import json
from typing import Any

import httpx2
import openai
import pytest

from tests.gm.chat_api import Refused, check_parameters, check_request
from tests.gm.fake_openai import FakeOpenAI, call

SCHEMA = {"type": "object", "properties": {"expression": {"type": "string"}}}
TOOL = {"type": "function", "function": {"name": "roll_dice", "parameters": SCHEMA}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{}"}}
VALID = {
    "model": "gpt-gm-test",
    "stream": True,
    "tools": [TOOL],
    "messages": [
        {"role": "system", "content": "You are the GM."},
        {"role": "user", "content": "alice: I roll."},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
        {"role": "user", "content": "bob: And I watch."},
    ],
}


def changed(edit) -> dict[str, Any]:
    body = copy.deepcopy(VALID)
    edit(body)
    return body


def test_a_valid_request_is_taken():
    check_request(VALID)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda b: b.pop("model"), "Missing required parameter: 'model'"),
        (lambda b: b.update(max_tokenz=5), "Unrecognized request argument supplied: max_tokenz"),
        (
            lambda b: b["messages"].append({"role": "narrator", "content": "x"}),
            "Invalid value: 'narrator'",
        ),
        # the tool message answering call_1 is missing
        (lambda b: b["messages"].pop(3), "did not have response messages: call_1"),
        # a tool message that answers nothing
        (
            lambda b: b["messages"].insert(
                2, {"role": "tool", "tool_call_id": "x", "content": "1"}
            ),
            "must be a response to a preceeding message with 'tool_calls'",
        ),
        # the calls' answers interrupted by a user message
        (
            lambda b: b["messages"][2]["tool_calls"].append({**CALL, "id": "call_2"}),
            "did not have response messages: call_2",
        ),
        (
            lambda b: b["tools"][0]["function"].update(name="roll dice!"),
            "string does not match pattern",
        ),
        (
            lambda b: b["messages"][2]["tool_calls"][0]["function"].update(name="a.b"),
            "string does not match pattern",
        ),
        (
            lambda b: b["tools"][0]["function"].update(parameters={"type": "array", "items": {}}),
            "schema must be a JSON Schema of 'type: \"object\"'",
        ),
        (
            lambda b: b["tools"][0]["function"].update(
                parameters={
                    "type": "object",
                    "properties": {
                        "cells": {"type": "array", "prefixItems": [{"type": "integer"}]}
                    },
                }
            ),
            "In context=('properties', 'cells'), array schema missing items",
        ),
        (
            lambda b: b["tools"][0]["function"].update(strict=True),
            "'additionalProperties' is required to be supplied and to be false",
        ),
        (lambda b: b.update(tool_choice="always"), "Invalid value for 'tool_choice'"),
        (lambda b: (b.pop("tools"), b.update(tool_choice="auto")), "only allowed when 'tools'"),
        (
            lambda b: b["messages"][1].pop("content"),
            "Missing required parameter: 'messages[1].content'",
        ),
    ],
)
def test_the_fake_refuses_what_the_api_refuses(edit, says):
    with pytest.raises(Refused, match=None) as refused:
        check_request(changed(edit))
    assert says in str(refused.value)


def test_strict_mode_wants_every_property_required_and_no_unsupported_keyword():
    closed = {**SCHEMA, "additionalProperties": False}
    with pytest.raises(Refused, match="Missing 'expression'"):
        check_parameters("roll_dice", closed, strict=True)
    lengthy = {
        "type": "object",
        "properties": {"e": {"type": "string", "maxLength": 3}},
        "required": ["e"],
        "additionalProperties": False,
    }
    with pytest.raises(Refused, match="'maxLength' is not permitted"):
        check_parameters("roll_dice", lengthy, strict=True)
    check_parameters("roll_dice", {**closed, "required": ["expression"]}, strict=True)
    check_parameters("roll_dice", SCHEMA, strict=False)  # not strict: open objects are fine


@pytest.fixture
def server():
    fake = FakeOpenAI()
    fake.start()
    yield fake
    fake.stop()


def client(fake: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=fake.url, max_retries=0)


def test_a_refusal_has_the_apis_error_shape(server):
    with pytest.raises(openai.BadRequestError) as refused:
        client(server).chat.completions.create(**changed(lambda b: b["messages"].pop(3)))
    error = refused.value.body
    assert error["type"] == "invalid_request_error" and "call_1" in error["message"]
    assert server.refusals == [refused.value.body]
    server.refusals.clear()


def test_without_a_key_the_server_answers_401(server):
    raw = httpx2.post(server.url + "/chat/completions", json=VALID)
    assert raw.status_code == 401 and "API key" in raw.json()["error"]["message"]


def raw_events(server, **how) -> list[Any]:
    server.reply("Hel", "lo", calls=[call("roll_dice", {"expression": "1d6"})], **how)
    with httpx2.stream(
        "POST",
        server.url + "/chat/completions",
        json=VALID,
        headers={"Authorization": "Bearer k"},
    ) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:]) for line in lines]


def test_a_reply_streams_real_chunks_then_done(server):
    events = raw_events(server)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:3]] == ["Hel", "lo"]
    opening = chunks[3]["choices"][0]["delta"]["tool_calls"][0]
    assert (opening["index"], opening["id"], opening["function"]["name"]) == (
        0,
        "call_fake1x0",
        "roll_dice",
    )
    arguments = "".join(
        c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in chunks[3:-1]
    )
    assert json.loads(arguments) == {"expression": "1d6"}
    assert [c["choices"][0]["finish_reason"] for c in chunks].count("tool_calls") == 1
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_a_cut_reply_has_no_finish_reason_and_no_done(server):
    events = raw_events(server, ending="cut")
    assert "[DONE]" not in events
    assert all(c["choices"][0]["finish_reason"] is None for c in events)


def test_a_length_reply_stops_half_way_through_its_call(server):
    events = raw_events(server, ending="length")
    assert events[-2]["choices"][0]["finish_reason"] == "length"
    arguments = "".join(
        c["choices"][0]["delta"].get("tool_calls", [{}])[0].get("function", {}).get("arguments", "")
        for c in events[:-1]
    )
    with pytest.raises(ValueError):
        json.loads(arguments)


def test_the_index0_variant_puts_every_call_at_index_0_with_its_own_id(server):
    server.reply(calls=[call("a", {}), call("b", {"x": 1})], variant="index0")
    with httpx2.stream(
        "POST", server.url + "/chat/completions", json=VALID, headers={"Authorization": "Bearer k"}
    ) as response:
        chunks = [json.loads(x[6:]) for x in response.iter_lines() if x.startswith("data: {")]
    parts = [p for c in chunks for p in c["choices"][0]["delta"].get("tool_calls", [])]
    assert {p["index"] for p in parts} == {0}
    assert [p["id"] for p in parts if "id" in p] == ["call_fake1x0", "call_fake1x1"]


def test_a_server_that_refuses_strict_says_so(server):
    server.refuses_strict = True
    body = changed(
        lambda b: b["tools"][0]["function"].update(
            strict=True,
            parameters={
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
                "additionalProperties": False,
            },
        )
    )
    with pytest.raises(openai.BadRequestError, match="does not support 'strict'"):
        client(server).chat.completions.create(**body)
