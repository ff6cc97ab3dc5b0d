"""What the Anthropic Messages API refuses, written from its public documentation, not from our
client: the fake API (tests/gm/fake_claude.py) answers a request that breaks any of these rules
with the API's own 400 `invalid_request_error`, and tests/ai_tools/test_tool_specs.py holds
every tool spec we send to them.

Sources, as published by Anthropic:
- Messages API reference (`POST /v1/messages`): required `model`, `max_tokens`, `messages`;
  the request fields; `system` as a string or text blocks; content as a string or blocks.
- Tool use ("Define tools", "Handle tool calls"): a custom tool is `name` matching
  `^[a-zA-Z0-9_-]{1,64}$`, `description`, and an `input_schema` that is a JSON Schema (draft
  2020-12) of `type: "object"`; each `tool_use` needs a `tool_result` in the very next user
  message, before any text there; every `tool_result` answers a `tool_use` of the message just
  before it.
- Errors: `{"type": "error", "error": {"type", "message"}, "request_id"}`. Where the API's
  wording is public (its error reports as users quote them: "tools.N.custom.input_schema:
  input_schema does not support oneOf, allOf, or anyOf at the top level", "messages: text
  content blocks must be non-empty", "messages.N: `tool_use` ids were found without
  `tool_result` blocks immediately after: ...", "unexpected `tool_use_id` found in
  `tool_result` blocks", "Tool names must be unique."), the fake uses it; elsewhere it says
  the rule plainly.

One rule is stricter than the API on purpose: the API silently *combines* consecutive messages
of one role into one turn; for a game master that is how two player actions become one (the
double attack of issue 8), so the fake refuses it, and so the client must never send it.
"""

import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

REQUEST_FIELDS = {
    "cache_control",
    "container",
    "diagnostics",
    "inference_geo",
    "max_tokens",
    "messages",
    "metadata",
    "model",
    "output_config",
    "service_tier",
    "speed",
    "stop_sequences",
    "stream",
    "system",
    "thinking",
    "tool_choice",
    "tools",
    "user_profile_id",
    "workspace_id",
}
TOOL_FIELDS = {
    "name",
    "description",
    "input_schema",
    "type",
    "cache_control",
    "allowed_callers",
    "defer_loading",
    "eager_input_streaming",
    "input_examples",
    "strict",
}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
COMBINATORS = ("oneOf", "allOf", "anyOf")
BLOCK_FIELDS = {
    "text": {"type", "text", "cache_control", "citations"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
}
USER_BLOCKS = {"text", "tool_result"}
ASSISTANT_BLOCKS = {"text", "tool_use"}


class Refused(Exception):
    """What the API answers with 400 invalid_request_error; the message is the API's."""


def check_request(body: Any) -> None:
    """Raise Refused with the API's message for the first rule the request body breaks."""
    if not isinstance(body, dict):
        raise Refused("Input should be a valid dictionary")
    extra = sorted(set(body) - REQUEST_FIELDS)
    if extra:
        raise Refused(f"{extra[0]}: Extra inputs are not permitted")
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            raise Refused(f"{field}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise Refused("model: Input should be a valid string")
    max_tokens = body["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise Refused("max_tokens: Input should be greater than or equal to 1")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise Refused("stream: Input should be a valid boolean")
    check_system(body.get("system"))
    tools = body.get("tools", [])
    check_tools(tools)
    check_messages(body["messages"], has_tools=bool(tools))


def check_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        if isinstance(system, str) and system and not system.strip():
            raise Refused("system: text content blocks must contain non-whitespace text")
        return
    if not isinstance(system, list):
        raise Refused("system: Input should be a valid string or a list of text blocks")
    for index, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise Refused(f"system.{index}: Input should be a text block")
        _check_text(block, "system")


def tool_problems(tool: Any, index: int) -> list[str]:
    """Every rule a custom tool definition breaks, in the API's words (empty when valid).
    `description` is optional in the API but we send one for every tool, so it is checked."""
    where = f"tools.{index}"
    if not isinstance(tool, dict):
        return [f"{where}: Input should be a valid dictionary"]
    problems = [
        f"{where}.{f}: Extra inputs are not permitted" for f in sorted(set(tool) - TOOL_FIELDS)
    ]
    if tool.get("type", "custom") != "custom":
        problems.append(f"{where}.type: only custom tools are served by this fake")
    name = tool.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        problems.append(f"{where}.custom.name: String should match pattern '{TOOL_NAME.pattern}'")
    description = tool.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append(f"{where}.custom.description: a tool needs a description")
    return problems + _schema_problems(tool.get("input_schema"), f"{where}.custom.input_schema")


def _schema_problems(schema: Any, where: str) -> list[str]:
    if not isinstance(schema, dict):
        return [f"{where}: Input should be a valid dictionary"]
    problems = []
    if schema.get("type") != "object":
        problems.append(f"{where}.type: Input should be 'object'")
    if any(key in schema for key in COMBINATORS):
        problems.append(
            f"{where}: input_schema does not support oneOf, allOf, or anyOf at the top level"
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        problems.append(f"{where}: JSON schema is invalid ({exc.message})")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        problems.append(f"{where}.properties: Input should be a valid dictionary")
    else:
        missing = [n for n in schema.get("required", []) if n not in properties]
        problems += [f"{where}.required: {n!r} is not a property" for n in missing]
    return problems


def check_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise Refused("tools: Input should be a valid list")
    for index, tool in enumerate(tools):
        problems = tool_problems(tool, index)
        if problems:
            raise Refused(problems[0])
    names = [tool["name"] for tool in tools]
    if len(names) != len(set(names)):
        raise Refused("tools: Tool names must be unique.")


def check_messages(messages: Any, *, has_tools: bool) -> None:
    if not isinstance(messages, list) or not messages:
        raise Refused("messages: at least one message is required")
    blocks = [_message_blocks(message, index) for index, message in enumerate(messages)]
    roles = [message["role"] for message in messages]
    if roles[0] != "user":
        raise Refused('messages: first message must use the "user" role')
    for index in range(1, len(roles)):
        if roles[index] == roles[index - 1]:
            raise Refused(
                f'messages.{index}: roles must alternate between "user" and "assistant" '
                "(the API would combine the two into one turn)"
            )
    if roles[-1] != "user":
        raise Refused(
            "This model does not support assistant message prefill. "
            "The conversation must end with a user message."
        )
    _check_tool_pairing(blocks, has_tools=has_tools)


def _message_blocks(message: Any, index: int) -> list[dict[str, Any]]:
    """The message's content as blocks, each checked on its own."""
    where = f"messages.{index}"
    if not isinstance(message, dict) or set(message) != {"role", "content"}:
        raise Refused(f"{where}: a message is exactly {{role, content}}")
    role, content = message["role"], message["content"]
    if role not in ("user", "assistant"):
        raise Refused(f"{where}.role: Input should be 'user' or 'assistant'")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise Refused(f"{where}.content: Input should be a valid string or list")
    if not content:
        raise Refused(
            f"{where}: all messages must have non-empty content except for the optional "
            "final assistant message"
        )
    allowed = USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS
    for position, block in enumerate(content):
        _check_block(block, allowed, f"{where}.content.{position}")
    return content


def _check_block(block: Any, allowed: set[str], where: str) -> None:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind not in allowed:
        raise Refused(f"{where}: Input tag {kind!r} is not allowed in this message's role")
    extra = sorted(set(block) - BLOCK_FIELDS[kind])
    if extra:
        raise Refused(f"{where}.{kind}.{extra[0]}: Extra inputs are not permitted")
    if kind == "text":
        _check_text(block, "messages")
    elif kind == "tool_use":
        if not isinstance(block.get("id"), str) or not TOOL_USE_ID.match(block["id"]):
            raise Refused(f"{where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        if not isinstance(block.get("name"), str) or not isinstance(block.get("input"), dict):
            raise Refused(f"{where}.tool_use: name (string) and input (object) are required")
    elif kind == "tool_result":
        _check_tool_result(block, where)


def _check_text(block: dict[str, Any], where: str) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        raise Refused(f"{where}: text blocks need a string `text`")
    if not text:
        raise Refused(f"{where}: text content blocks must be non-empty")
    if not text.strip():
        raise Refused(f"{where}: text content blocks must contain non-whitespace text")


def _check_tool_result(block: dict[str, Any], where: str) -> None:
    if not isinstance(block.get("tool_use_id"), str):
        raise Refused(f"{where}.tool_result.tool_use_id: Field required")
    content = block.get("content", "")
    if isinstance(content, list):
        for position, part in enumerate(content):
            _check_block(part, {"text"}, f"{where}.tool_result.content.{position}")
    elif not isinstance(content, str):
        raise Refused(f"{where}.tool_result.content: Input should be a valid string or list")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        raise Refused(f"{where}.tool_result.is_error: Input should be a valid boolean")


def _check_tool_pairing(blocks: list[list[dict[str, Any]]], *, has_tools: bool) -> None:
    """Each assistant tool_use is answered at the start of the next (user) message, and each
    tool_result answers a tool_use of the message just before it; ids are unique."""
    seen: set[str] = set()
    for index, content in enumerate(blocks):
        uses = [b["id"] for b in content if b["type"] == "tool_use"]
        results = [b for b in content if b["type"] == "tool_result"]
        if (uses or results) and not has_tools:
            raise Refused(
                "Requests which include `tool_use` or `tool_result` blocks must define tools."
            )
        if seen & set(uses) or len(uses) != len(set(uses)):
            raise Refused(f"messages.{index}: `tool_use` ids must be unique")
        seen.update(uses)
        previous = blocks[index - 1] if index else []
        asked = {b["id"] for b in previous if b["type"] == "tool_use"}
        for position, result in enumerate(results):
            if result["tool_use_id"] not in asked:
                raise Refused(
                    f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {result['tool_use_id']}. Each `tool_result` block "
                    "must have a corresponding `tool_use` block in the previous message."
                )
    for index, content in enumerate(blocks):
        uses = [b["id"] for b in content if b["type"] == "tool_use"]
        if uses:
            _check_answered(index, uses, blocks[index + 1] if index + 1 < len(blocks) else [])


def _check_answered(index: int, uses: list[str], following: list[dict[str, Any]]) -> None:
    """The tool_results lead the next message: no text before them, one per tool_use."""
    leading = []
    for block in following:
        if block["type"] != "tool_result":
            break
        leading.append(block["tool_use_id"])
    unanswered = [use for use in uses if use not in leading]
    stray = [block for block in following[len(leading) :] if block["type"] == "tool_result"]
    if unanswered or stray or len(leading) != len(set(leading)):
        ids = ", ".join(unanswered) or ", ".join(b["tool_use_id"] for b in stray) or "duplicates"
        raise Refused(
            f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {ids}. Each `tool_use` block must have a corresponding "
            "`tool_result` block in the next message."
        )
