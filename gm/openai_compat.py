"""The OpenAI-compatible GM: any Chat Completions server (OpenAI, Ollama, vLLM, llama.cpp, LM
Studio) through the official `openai` SDK, streaming, with the registry's tools as functions.

It plays a turn as the Claude GM does (gm/claude.py): round by round, each stored before its
tool calls run, a stored round replayed rather than asked again, words streamed to the table as
they arrive, a Stop hanging the stream up. The transcript keeps rounds in one form for every
provider (text and tool_use blocks, tool_result blocks); this module writes them to the server
as Chat Completions messages (an assistant message with `tool_calls`, one `role: "tool"`
message per call id).

A reply counts only if the server said it finished (`finish_reason` `stop` or `tool_calls`): a
stream that ends without one, or stops at `length`, fails the turn and runs none of its calls.
What real servers do is handled here:
- tool-call deltas are joined by `id` as well as `index` (Ollama and some vLLM/SGLang builds
  send every parallel call at index 0), arguments may arrive whole in one delta, and a server
  that repeats a call's complete arguments is not taken to have sent them twice;
- a server may answer `stop` with tool calls (older Ollama): the calls are the reply;
- a small model may write its call as JSON text instead (`{"name": ..., "arguments": ...}`):
  a reply that is nothing but such JSON is read as the calls it names, and is not narrated;
- arguments that are not JSON, or not valid for the tool, leave a failed row in the log and a
  tool message saying why;
- schemas are sent in a form the server takes (gm/tool_schemas.py); strict mode only where the
  server supports it (OPENAI_STRICT_TOOLS); `tool_choice` only when configured, since some
  servers ignore it (Ollama documents it as unsupported).
"""

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import openai
from django.conf import settings

from ai_tools import registry
from gm import tool_schemas
from gm.base import GMError, GMProvider, Round, Session, failures_told
from gm.claude import conversation, system_prompt
from gm.lease import response_hang_up

MAX_TOKENS = 1024
MAX_ROUNDS = 8
OPENAI_HOST = "api.openai.com"
FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass(frozen=True)
class Endpoint:
    """One OpenAI-compatible server as settings name it (the key stays in the environment)."""

    base_url: str
    api_key: str
    model: str
    strict: str = "auto"  # auto (on for OpenAI itself), on, off
    tool_choice: str = ""  # "" (not sent), auto, required, none
    max_retries: int = 2
    timeout: float = 60.0

    @property
    def is_openai(self) -> bool:
        return not self.base_url or urlparse(self.base_url).hostname == OPENAI_HOST

    @property
    def sends_strict(self) -> bool:
        return self.strict == "on" or (self.strict == "auto" and self.is_openai)


class OpenAIProvider(GMProvider):
    """A model behind an OpenAI-compatible Chat Completions server. On when OPENAI_MODEL is set
    (docs/operations.md#settings-environment)."""

    name = "openai"

    def __init__(self, *, client: openai.OpenAI, endpoint: Endpoint) -> None:
        self.client = client
        self.endpoint = endpoint

    @classmethod
    def from_settings(cls) -> "OpenAIProvider":
        if not settings.OPENAI_MODEL:
            raise GMError("the OpenAI-compatible GM needs OPENAI_MODEL to be set.")
        endpoint = Endpoint(
            base_url=settings.OPENAI_BASE_URL,
            api_key=settings.OPENAI_API_KEY,
            model=settings.OPENAI_MODEL,
            strict=settings.OPENAI_STRICT_TOOLS,
            tool_choice=settings.OPENAI_TOOL_CHOICE,
            max_retries=settings.OPENAI_MAX_RETRIES,
            timeout=settings.OPENAI_TIMEOUT,
        )
        return cls.for_endpoint(endpoint)

    @classmethod
    def for_endpoint(cls, endpoint: Endpoint) -> "OpenAIProvider":
        if endpoint.is_openai and not endpoint.api_key:
            raise GMError("the OpenAI GM needs OPENAI_API_KEY to be set.")
        client = openai.OpenAI(
            # A local server takes any key; the SDK insists on one.
            api_key=endpoint.api_key or "not-needed",
            base_url=endpoint.base_url or None,
            max_retries=endpoint.max_retries,
            timeout=endpoint.timeout,
        )
        return cls(client=client, endpoint=endpoint)

    @property
    def model(self) -> str:
        return f"openai/{self.endpoint.model}"

    def run(self, session: Session) -> None:
        with failures_told(openai, "the model server", _describe):
            self._converse(session)

    def _converse(self, session: Session) -> None:
        messages = [{"role": "system", "content": system_prompt(session.context)}]
        messages += chat_messages(conversation(session.context))
        tools, strict = tool_specs(strict=self.endpoint.sends_strict)
        spoke = False
        for index in range(MAX_ROUNDS):
            stored = session.round(index)
            if stored is None:
                session.step()
                lead = "\n\n" if spoke else ""
                stored = self._ask(session, index, lead=lead, messages=messages, tools=tools)
            else:
                session.say(stored.text)
            spoke = spoke or bool(stored.text.strip())
            messages += chat_messages([{"role": "assistant", "content": stored.content}])
            if not stored.tool_uses:
                return
            if stored.results is None:
                results = [_result(session, use, stored.model, strict) for use in stored.tool_uses]
                stored = session.complete_round(stored, results)
            messages += chat_messages([{"role": "user", "content": stored.results}])
        raise GMError(f"the model was still calling tools after {MAX_ROUNDS} rounds.")

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict:
        request: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": messages,
            "tools": tools,
            "stream": True,
            # Tokens for the analytics, where the server reports them (a last, choice-less chunk).
            "stream_options": {"include_usage": True},
        }
        # OpenAI's own newer models refuse max_tokens; the servers people run locally know it.
        limit = "max_completion_tokens" if self.endpoint.is_openai else "max_tokens"
        request[limit] = MAX_TOKENS
        if self.endpoint.tool_choice:
            request["tool_choice"] = self.endpoint.tool_choice
        return request

    def _ask(
        self,
        session: Session,
        index: int,
        *,
        lead: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
    ) -> Round:
        """A new round from the model, stored before any of its tool calls runs."""
        reply = _Reply(lead=lead)
        request = self._request(messages, tools)
        with (
            self.client.chat.completions.create(**request) as stream,
            session.streaming(response_hang_up(stream.response)),
        ):
            for chunk in stream:
                reply.take(chunk, session)
        reply.finish(session, index)
        reported = reply.model or self.endpoint.model
        return session.record_round(
            content=reply.blocks(),
            stop_reason=reply.finish_reason or "",
            model=f"openai/{reported}",
            text=reply.said,
            usage=reply.usage,
        )


@dataclass
class _Call:
    id: str
    index: int
    name: str = ""
    arguments: str = ""


@dataclass
class _Reply:
    """One streamed reply as it accumulates: narration, tool calls, why it finished."""

    lead: str = ""
    said: str = ""
    held: str = ""  # text that may be a tool call written as JSON: said at the end, or not
    model: str = ""
    finish_reason: str | None = None
    usage: tuple[int, int] | None = None
    calls: list[_Call] = field(default_factory=list)
    _by_id: dict[str, _Call] = field(default_factory=dict)
    _at_index: dict[int, _Call] = field(default_factory=dict)

    def take(self, chunk: Any, session: Session) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage is not None and usage.prompt_tokens is not None:
            self.usage = (usage.prompt_tokens, usage.completion_tokens or 0)
        for choice in chunk.choices or []:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None and delta.content:
                self._text(delta.content, session)
            for part in (delta.tool_calls or []) if delta is not None else []:
                self._call(part)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _text(self, text: str, session: Session) -> None:
        """Narration goes to the table as it comes, except a reply that opens like JSON (a
        call written as text, perhaps fenced): that is held until the reply ends."""
        if self.said:
            self._say(text, session)
            return
        pending = self.held + text
        head = pending.lstrip()
        if not head or head[0] in "{`":
            self.held = pending
            return
        self.held = ""
        self._say(head, session)

    def _say(self, text: str, session: Session) -> None:
        session.say(self.lead + text)
        self.said += self.lead + text
        self.lead = ""

    def _call(self, part: Any) -> None:
        """A tool-call delta: a new id opens a call; a delta without one continues the call
        last opened at its index (servers that put every call at index 0 still give each its
        own id)."""
        index = part.index if part.index is not None else 0
        function = part.function
        if part.id and part.id in self._by_id:
            call = self._by_id[part.id]
        elif part.id or index not in self._at_index:
            call = _Call(id=part.id or f"call_{uuid.uuid4().hex[:24]}", index=index)
            self.calls.append(call)
            self._by_id[call.id] = call
            self._at_index[index] = call
        else:
            call = self._at_index[index]
        if function is None:
            return
        if function.name and not call.name:
            call.name = function.name
        if function.arguments and not _repeats(call.arguments, function.arguments):
            call.arguments += function.arguments

    def finish(self, session: Session, index: int) -> None:
        """Check the reply finished as a finished one does; read JSON text as calls."""
        if self.finish_reason is None:
            raise GMError(
                "the model server's stream ended before the reply was complete (no "
                "finish_reason)" + _not_run([c.name for c in self.calls]) + "."
            )
        if self.finish_reason == "length":
            raise GMError(
                f"the model's reply hit the max_tokens limit ({MAX_TOKENS})"
                + _not_run([c.name for c in self.calls])
                + "."
            )
        if self.finish_reason not in ("stop", "tool_calls", "function_call"):
            raise GMError(
                f"the model server ended the reply with finish_reason {self.finish_reason!r}"
                + _not_run([c.name for c in self.calls])
                + "."
            )
        if self.held:
            written = _calls_in_text(self.held) if not self.calls else None
            if written:
                for n, (name, arguments) in enumerate(written):
                    self.calls.append(_Call(f"call_text{index}x{n}", n, name, arguments))
            elif self.held.strip():
                self._say(self.held.strip(), session)
            self.held = ""

    def blocks(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if self.said.strip():
            blocks.append({"type": "text", "text": self.said})
        for call in self.calls:
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}
            )
        return blocks


def _repeats(sofar: str, part: str) -> bool:
    """A fragment that is the whole call's arguments again, after they came complete."""
    if not sofar:
        return False
    try:
        return json.loads(sofar) == json.loads(part)
    except ValueError:
        return False


def _input(call: _Call) -> Any:
    """The call's arguments as our tools read them; text that is not JSON stays text (its
    call then fails validation, logged, and the model is told why)."""
    raw = call.arguments.strip() or "{}"
    try:
        return json.loads(raw)
    except ValueError:
        return {"_arguments_not_json": call.arguments}


NOT_JSON = "_arguments_not_json"


def _calls_in_text(text: str) -> list[tuple[str, str]] | None:
    """Tool calls a model wrote as JSON text: `{"name", "arguments"|"parameters"}`, or a list
    of them, perhaps in a ```json fence; None unless the text is just that, naming our tools."""
    body = text.strip()
    fenced = FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)
    except ValueError:
        return None
    items = value if isinstance(value, list) else [value]
    names = {tool.name for tool in [*registry.write_tools(), *registry.read_tools()]}
    calls = []
    for item in items:
        if not isinstance(item, dict) or item.get("name") not in names:
            return None
        arguments = item.get("arguments", item.get("parameters", {}))
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append((item["name"], raw))
    return calls or None


def tool_specs(*, strict: bool) -> tuple[list[dict[str, Any]], set[str]]:
    """The registry's tools as Chat Completions functions, and the names of those sent
    strict (only when `strict`, and only tools whose schema has a strict form)."""
    specs, strict_names = [], set()
    for tool in [*registry.write_tools(), *registry.read_tools()]:
        spec = tool.spec()
        function: dict[str, Any] = {"name": spec["name"], "description": spec["description"]}
        try:
            if not strict:
                raise tool_schemas.NoStrictForm()
            function["parameters"] = tool_schemas.strict(spec["input_schema"])
            function["strict"] = True
            strict_names.add(spec["name"])
        except tool_schemas.NoStrictForm:
            function["parameters"] = tool_schemas.compatible(spec["input_schema"])
        specs.append({"type": "function", "function": function})
    return specs, strict_names


def _result(session: Session, use: dict[str, Any], model: str, strict: set[str]) -> dict:
    raw = use["input"]
    if isinstance(raw, dict) and set(raw) == {NOT_JSON}:
        # Logged as given (a failed row: not an object); the model reads why.
        session.call_tool(use["name"], raw[NOT_JSON], model=model, tool_use_id=use["id"])
        content = {
            "error": "Invalid arguments: not valid JSON; the call was not run. Send the "
            "arguments as one JSON object.",
            "status": "failed",
        }
        return _tool_result(use, json.dumps(content, sort_keys=True), ok=False)
    if use["name"] in strict:
        schema = _schemas()[use["name"]]
        raw = tool_schemas.strip_nulls(schema, raw)
    outcome = session.call_tool(use["name"], raw, model=model, tool_use_id=use["id"])
    return _tool_result(use, outcome.as_text(), ok=outcome.ok)


def _schemas() -> dict[str, dict[str, Any]]:
    return {t.name: t.schema for t in [*registry.write_tools(), *registry.read_tools()]}


def _tool_result(use: dict[str, Any], content: str, *, ok: bool) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use["id"], "content": content, "is_error": not ok}


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Transcript messages (text / tool_use / tool_result blocks) as Chat Completions messages:
    an assistant's text and tool_use blocks become one message with `tool_calls`; a user's
    tool_result blocks become one `role: "tool"` message each (first: they must follow the
    calls), its text a user message."""
    out: list[dict[str, Any]] = []
    for message in messages:
        blocks = message["content"]
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        if message["role"] == "assistant":
            uses = [b for b in blocks if b["type"] == "tool_use"]
            chat: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if uses:
                chat["tool_calls"] = [
                    {
                        "id": use["id"],
                        "type": "function",
                        "function": {"name": use["name"], "arguments": _arguments(use["input"])},
                    }
                    for use in uses
                ]
            elif chat["content"] is None:
                continue
            out.append(chat)
            continue
        for block in blocks:
            if block["type"] == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": block["tool_use_id"],
                        "content": block["content"],
                    }
                )
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


def _arguments(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {NOT_JSON}:
        return value[NOT_JSON]
    return json.dumps(value, sort_keys=True, default=str)


def _not_run(names: list[str]) -> str:
    names = [name or "(unnamed)" for name in names]
    if len(names) > 1:
        return f"; its tool calls {', '.join(names)} were not run"
    return f"; its tool call {names[0]} was not run" if names else ""


def _describe(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    message = (error or {}).get("message") or exc.message
    return f"the model server answered {exc.status_code}: {message}"
