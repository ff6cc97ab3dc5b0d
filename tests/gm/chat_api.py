"""What the OpenAI Chat Completions API refuses, written from its public reference, not from our
client: the fake server (tests/gm/fake_openai.py) answers a request that breaks any of these
rules with the API's own 400 `{"error": {"message", "type": "invalid_request_error", "param",
"code"}}`.

Sources, as published by OpenAI and quoted by its users:
- API reference, `POST /v1/chat/completions`: required `model` and `messages`; the message
  roles `developer`, `system`, `user`, `assistant`, `tool` (and the deprecated `function`); an
  assistant message has `content` and/or `tool_calls` (`{id, type: "function", function: {name,
  arguments}}`, arguments a string); a tool message has `content` and `tool_call_id`; a tool
  is `{type: "function", function: {name, description?, parameters?, strict?}}`, its name
  matching `^[a-zA-Z0-9_-]{1,64}$`; `tool_choice` is none/auto/required or a named function,
  and only with `tools`.
- The API's errors as users quote them: "An assistant message with 'tool_calls' must be
  followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did
  not have response messages: ...", "Invalid parameter: messages with role 'tool' must be a
  response to a preceeding message with 'tool_calls'.", "Invalid schema for function 'f': In
  context=('properties', 'x'), array schema missing items." (code invalid_function_parameters:
  an `array` needs `items`, so a `prefixItems`-only tuple is refused even without strict mode),
  "Invalid schema for function 'f': schema must be a JSON Schema of 'type: \"object\"', got
  'type: \"None\"'.", "'tool_choice' is only allowed when 'tools' are specified."
- Structured Outputs, "Supported schemas" (strict mode): every object sets
  `additionalProperties: false`; every property is in `required` (optional ones are written
  nullable); the root is an object, not `anyOf`; only a subset of keywords (no
  `patternProperties`, `prefixItems`, `not`, `uniqueItems`, `minLength`, `maxLength`).
  Error wording: "Invalid schema for function 'f': In context=(), 'additionalProperties' is
  required to be supplied and to be false", "... 'required' is required to be supplied and to
  be an array including every key in properties. Missing 'x'".
"""

import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

REQUEST_FIELDS = {
    "audio",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "messages",
    "metadata",
    "modalities",
    "model",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
}
ROLES = {"developer", "system", "user", "assistant", "tool", "function"}
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL_CHOICES = {"none", "auto", "required"}
# Strict mode's subset of JSON Schema (Structured Outputs, "Supported schemas").
STRICT_KEYWORDS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "description",
    "title",
    "$defs",
    "$ref",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "format",
    "minItems",
    "maxItems",
}


class Refused(Exception):
    """What the API answers with 400 invalid_request_error."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.param = param
        self.code = code


def check_request(body: Any) -> None:
    """Raise Refused as the API would; return if it would take the request."""
    if not isinstance(body, dict):
        raise Refused("The request body must be a JSON object.")
    for key in ("model", "messages"):
        if key not in body:
            raise Refused(f"Missing required parameter: '{key}'.", param=key)
    unknown = sorted(set(body) - REQUEST_FIELDS)
    if unknown:
        raise Refused(f"Unrecognized request argument supplied: {unknown[0]}", param=unknown[0])
    if not isinstance(body["model"], str) or not body["model"]:
        raise Refused("Invalid type for 'model': expected a string.", param="model")
    tools = body.get("tools")
    if tools is not None:
        _check_tools(tools)
    if "tool_choice" in body:
        _check_tool_choice(body["tool_choice"], tools)
    _check_messages(body["messages"])


def _check_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise Refused("Invalid type for 'tools': expected an array.", param="tools")
    names = set()
    for n, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise Refused(f"Invalid value for 'tools[{n}].type'.", param=f"tools[{n}].type")
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise Refused(
                f"Missing required parameter: 'tools[{n}].function.name'.",
                param=f"tools[{n}].function.name",
            )
        name = function["name"]
        if not FUNCTION_NAME.match(name):
            raise Refused(
                f"Invalid 'tools[{n}].function.name': string does not match pattern. Expected a "
                "string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
                param=f"tools[{n}].function.name",
                code="invalid_value",
            )
        if name in names:
            raise Refused(f"Duplicate function name: '{name}'.", param="tools")
        names.add(name)
        if "parameters" in function:
            check_parameters(name, function["parameters"], strict=function.get("strict") is True)


def check_parameters(name: str, schema: Any, *, strict: bool) -> None:
    """A function's parameters: an object JSON Schema; every array has `items`; in strict mode,
    the Structured Outputs subset."""
    where = f"Invalid schema for function '{name}'"
    if not isinstance(schema, dict) or schema.get("type") != "object":
        got = schema.get("type") if isinstance(schema, dict) else None
        raise Refused(
            f"{where}: schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'.",
            param="tools",
            code="invalid_function_parameters",
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise Refused(f"{where}: {exc.message}", code="invalid_function_parameters") from exc
    _walk(schema, (), where=where, strict=strict)


def _walk(node: Any, context: tuple[str, ...], *, where: str, strict: bool) -> None:
    if isinstance(node, list):
        for n, item in enumerate(node):
            _walk(item, (*context, str(n)), where=where, strict=strict)
        return
    if not isinstance(node, dict):
        return
    at = f"In context={context!r}"
    types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    if "array" in types and "items" not in node:
        raise Refused(
            f"{where}: {at}, array schema missing items.", code="invalid_function_parameters"
        )
    if strict:
        _strict(node, types, at=f"{where}: {at}")
    for key, value in node.items():
        if key in ("properties", "$defs", "patternProperties"):
            for prop, schema in value.items():
                _walk(schema, (*context, key, prop), where=where, strict=strict)
        elif key in ("items", "anyOf", "prefixItems", "not", "additionalProperties"):
            _walk(value, (*context, key), where=where, strict=strict)


def _strict(node: dict[str, Any], types: list[Any], *, at: str) -> None:
    unsupported = sorted(set(node) - STRICT_KEYWORDS)
    if unsupported:
        raise Refused(
            f"{at}, '{unsupported[0]}' is not permitted.", code="invalid_function_parameters"
        )
    if "object" not in types:
        return
    if node.get("additionalProperties") is not False:
        raise Refused(
            f"{at}, 'additionalProperties' is required to be supplied and to be false.",
            code="invalid_function_parameters",
        )
    properties = node.get("properties", {})
    required = node.get("required")
    missing = [p for p in properties if not isinstance(required, list) or p not in required]
    if missing:
        raise Refused(
            f"{at}, 'required' is required to be supplied and to be an array including every "
            f"key in properties. Missing '{missing[0]}'.",
            code="invalid_function_parameters",
        )


def _check_tool_choice(choice: Any, tools: Any) -> None:
    if not tools:
        raise Refused(
            "'tool_choice' is only allowed when 'tools' are specified.", param="tool_choice"
        )
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise Refused(f"Invalid value for 'tool_choice': '{choice}'.", param="tool_choice")
        return
    names = {t["function"]["name"] for t in tools}
    named = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or choice.get("type") != "function" or named not in names:
        raise Refused("Invalid value for 'tool_choice'.", param="tool_choice")


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise Refused("Invalid 'messages': empty array. Expected an array with minimum length 1.")
    waiting: list[str] = []  # tool_call ids of the last assistant message still unanswered
    answerable: set[str] = set()
    for n, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            role = message.get("role") if isinstance(message, dict) else None
            raise Refused(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                "'function', 'tool', and 'developer'.",
                param=f"messages[{n}].role",
                code="invalid_value",
            )
        role = message["role"]
        if waiting and role != "tool":
            raise Refused(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(waiting)}",
                param="messages",
            )
        if role == "assistant":
            waiting = _assistant(message, n)
            answerable = set(waiting)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in answerable:
                raise Refused(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages[{n}].role",
                )
            if not isinstance(message.get("content"), (str, list)):
                raise Refused(
                    f"Missing required parameter: 'messages[{n}].content'.",
                    param=f"messages[{n}].content",
                )
            answerable.discard(call_id)
            waiting = [w for w in waiting if w != call_id]
        else:
            answerable = set()
            if not isinstance(message.get("content"), (str, list)):
                raise Refused(
                    f"Missing required parameter: 'messages[{n}].content'.",
                    param=f"messages[{n}].content",
                )
    if waiting:
        raise Refused(
            "An assistant message with 'tool_calls' must be followed by tool messages responding "
            f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
            f"{', '.join(waiting)}",
            param="messages",
        )


def _assistant(message: dict[str, Any], n: int) -> list[str]:
    calls = message.get("tool_calls")
    content = message.get("content")
    if calls is None:
        if not isinstance(content, (str, list)):
            raise Refused(
                f"Invalid value for 'messages[{n}].content': expected content or tool_calls.",
                param=f"messages[{n}].content",
            )
        return []
    if not isinstance(calls, list) or not calls:
        raise Refused(
            f"Invalid 'messages[{n}].tool_calls': empty array. Expected an array with minimum "
            "length 1.",
            param=f"messages[{n}].tool_calls",
        )
    ids = []
    for k, call in enumerate(calls):
        where = f"messages[{n}].tool_calls[{k}]"
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(call, dict)
            or call.get("type") != "function"
            or not isinstance(call.get("id"), str)
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            raise Refused(
                f"Invalid '{where}': expected {{id, type, function: {{name, arguments}}}}.",
                param=where,
            )
        if not FUNCTION_NAME.match(function["name"]):
            raise Refused(
                f"Invalid '{where}.function.name': string does not match pattern.", param=where
            )
        ids.append(call["id"])
    return ids
