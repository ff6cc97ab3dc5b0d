"""The Claude GM: the official `anthropic` SDK, streaming, tool use with the registry's schemas.

Each round streams one Messages API response: text deltas go straight to the table, tool_use
blocks run through the session (write tools through the audited dispatch, with the model
version that asked for them on the log row), and their results go back as tool_result blocks
until the model stops asking. Each complete reply is stored as a round of the turn's transcript
before its tool calls run. A round counts only when the API said it ended (message_stop)
and why (end_turn or tool_use): a stream cut short, a reset connection or a reply stopped by
max_tokens fails the turn, and none of that round's tool calls runs. The conversation it sends
is built from the context, which has already dropped undone turns, reverted calls and turns the
GM did not finish, and says what became of them instead.
"""

import json
from typing import Any

import anthropic
from django.conf import settings

from ai_tools import registry
from gm.base import GMError, GMProvider, Round, Session, failures_told
from gm.context import GMContext, state_summary
from gm.lease import response_hang_up

MAX_TOKENS = 1024
MAX_ROUNDS = 8
PERSONA = (
    'You are the game master of the tabletop campaign "{name}". Narrate in two to four vivid '
    "sentences, in the second person to the player who spoke. Change the game only through "
    "the tools, and only as the story requires; every call is logged and the table can undo "
    "it. Use the creature, chapter and dungeon ids from the state below; call get_state when "
    "you need more, roll_dice for chance."
)


class AnthropicProvider(GMProvider):
    """Claude as the GM. On when `ANTHROPIC_API_KEY` is set
    (docs/operations.md#settings-environment)."""

    name = "anthropic"

    def __init__(self, *, client: anthropic.Anthropic, model: str) -> None:
        self.client = client
        self.requested_model = model

    @classmethod
    def from_settings(cls) -> "AnthropicProvider":
        if not settings.ANTHROPIC_API_KEY:
            raise GMError("the Claude GM needs ANTHROPIC_API_KEY to be set.")
        client = anthropic.Anthropic(
            api_key=settings.ANTHROPIC_API_KEY,
            base_url=settings.ANTHROPIC_BASE_URL or None,
            max_retries=settings.ANTHROPIC_MAX_RETRIES,
            timeout=settings.ANTHROPIC_TIMEOUT,
        )
        return cls(client=client, model=settings.ANTHROPIC_MODEL)

    @property
    def model(self) -> str:
        return f"anthropic/{self.requested_model}"

    def run(self, session: Session) -> None:
        with failures_told(anthropic, "the Claude API", _describe):
            self._converse(session)

    def _converse(self, session: Session) -> None:
        """Round by round: a stored round (this turn ran before, on a worker that died) is
        replayed from the transcript, its narration said again and its reply sent back as it
        was, never asked of the model again; its tool calls return their recorded outcomes."""
        system = system_prompt(session.context)
        messages = conversation(session.context)
        tools = tool_specs()
        spoke = False
        for index in range(MAX_ROUNDS):
            stored = session.round(index)
            if stored is None:
                session.step()
                lead = "\n\n" if spoke else ""
                stored = self._ask(
                    session, lead=lead, system=system, messages=messages, tools=tools
                )
            else:
                session.say(stored.text)
            spoke = spoke or bool(stored.text.strip())
            messages.append({"role": "assistant", "content": stored.content})
            if not stored.tool_uses:
                return
            if stored.results is None:
                results = [_result(session, use, stored.model) for use in stored.tool_uses]
                stored = session.complete_round(stored, results)
            messages.append({"role": "user", "content": stored.results})
        raise GMError(f"the model was still calling tools after {MAX_ROUNDS} rounds.")

    def _ask(self, session: Session, *, lead: str, **request: Any) -> Round:
        """A new round from the model, stored before any of its tool calls runs."""
        said: list[str] = []
        reply = self._stream(session, said, lead=lead, **request)
        _check_stop(reply)
        return session.record_round(
            content=_params(reply.content),
            stop_reason=reply.stop_reason,
            model=f"anthropic/{reply.model}",
            text="".join(said),
            usage=_usage(reply),
        )

    def _stream(self, session: Session, said: list[str], *, lead: str, **request: Any) -> Any:
        """One streamed round: its words go to the table as they arrive (and into `said`); the
        reply counts only if the API said it ended (message_stop). A body that just stops (a
        dropped connection, a proxy timeout) is not a reply, whatever it held, and none of its
        tool calls runs. A Stop hangs the stream up (`session.streaming`): the turn ends there."""
        started: list[str] = []
        finished = False
        with (
            self.client.messages.stream(
                model=self.requested_model, max_tokens=MAX_TOKENS, **request
            ) as stream,
            session.streaming(response_hang_up(stream.response)),
        ):
            for event in stream:
                if event.type == "text" and event.text:
                    session.say(lead + event.text)
                    said.append(lead + event.text)
                    lead = ""
                elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                    started.append(event.content_block.name)
                finished = finished or event.type == "message_stop"
            if not finished:
                raise GMError(
                    "the Claude API stream ended before the reply was complete (no message_stop)"
                    + _not_run(started)
                    + "."
                )
            return stream.get_final_message()


def _usage(reply: Any) -> tuple[int, int] | None:
    usage = getattr(reply, "usage", None)
    if usage is None or usage.input_tokens is None:
        return None
    return usage.input_tokens, usage.output_tokens or 0


def tool_specs() -> list[dict[str, Any]]:
    """The registry's tools as the Messages API takes them (write tools, then read tools)."""
    return [tool.spec() for tool in [*registry.write_tools(), *registry.read_tools()]]


def _check_stop(reply: Any) -> None:
    """A reply counts only if it stopped one of the ways a finished one does: to call its
    tools (tool_use), or done (end_turn, stop_sequence) without any. Otherwise the turn fails
    and none of its calls runs: a tool call cut off by max_tokens carries half its input."""
    uses = [b for b in reply.content if b.type == "tool_use"]
    if reply.stop_reason == "tool_use":
        return
    if reply.stop_reason in ("end_turn", "stop_sequence") and not uses:
        return
    not_run = _not_run([use.name for use in uses])
    if reply.stop_reason == "max_tokens":
        raise GMError(f"the model's reply hit the max_tokens limit ({MAX_TOKENS}){not_run}.")
    raise GMError(
        f"the Claude API ended the reply with stop_reason {reply.stop_reason!r}{not_run}."
    )


def _not_run(names: list[str]) -> str:
    if len(names) > 1:
        return f"; its tool calls {', '.join(names)} were not run"
    return f"; its tool call {names[0]} was not run" if names else ""


def _describe(exc: anthropic.APIStatusError) -> str:
    """The API's own error type and message; an error event inside a 200 stream is said to
    come mid-stream rather than with a misleading status."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    kind = error.get("type") or "error"
    where = f"{exc.status_code} {kind}" if exc.status_code >= 400 else f"{kind} mid-stream"
    return f"the Claude API reported {where}: {error.get('message') or exc.message}"


def _params(blocks: list[Any]) -> list[dict[str, Any]]:
    """The reply as it goes back into the conversation (the API refuses empty and
    whitespace-only text blocks)."""
    params = []
    for block in blocks:
        if block.type == "tool_use":
            params.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        elif block.type == "text" and block.text.strip():
            params.append(_text(block.text))
    return params


def _result(session: Session, use: dict[str, Any], model: str) -> dict[str, Any]:
    outcome = session.call_tool(use["name"], use["input"], model=model, tool_use_id=use["id"])
    return {
        "type": "tool_result",
        "tool_use_id": use["id"],
        "content": outcome.as_text(),
        "is_error": not outcome.ok,
    }


def system_prompt(context: GMContext) -> str:
    parts = [
        PERSONA.format(name=context.campaign.name),
        "Current state:\n" + state_summary(context.state, context.players),
    ]
    if context.undone:
        parts.append(
            "Undone by the table (their effects are gone from the state; never narrate them "
            "as having happened):\n" + _bullets(context.undone)
        )
    if context.unfinished:
        parts.append(
            "Earlier turns without a GM reply (for context only; answer just the message of "
            "the current turn):\n" + _bullets(context.unfinished)
        )
    return "\n\n".join(parts)


def _bullets(notes: list[str]) -> str:
    return "\n".join(f"- {note}" for note in notes)


def conversation(context: GMContext) -> list[dict[str, Any]]:
    """Past answered turns as user/assistant messages (their tool calls as tool_use/tool_result
    pairs), then the player's new message. Each player message is its own user message: the
    only thing it may share a message with is the tool results before it (which the API wants
    first), so two players' words never run together into one action."""
    messages: list[dict[str, Any]] = []
    for past in context.history:
        _append(messages, "user", _text(f"{past.speaker}: {past.message}"))
        if past.tool_calls:
            ids = {call.id: "toolu_" + call.id.replace("-", "") for call in past.tool_calls}
            for c in past.tool_calls:
                use = {"type": "tool_use", "id": ids[c.id], "name": c.tool_name, "input": c.input}
                _append(messages, "assistant", use)
            for c in past.tool_calls:
                result = {
                    "type": "tool_result",
                    "tool_use_id": ids[c.id],
                    "content": _json(c.result),
                }
                _append(messages, "user", result)
        if past.reply:
            _append(messages, "assistant", _text(past.reply))
    _append(messages, "user", _text(f"{context.speaker}: {context.message}"))
    return messages


def _append(messages: list[dict[str, Any]], role: str, block: dict[str, Any]) -> None:
    """Add a block as a new message, or to the last one when it is of the same role and may
    take it: an assistant's tool_use after its own blocks, a user's block after tool results."""
    last = messages[-1] if messages else None
    joins = last is not None and last["role"] == role
    if joins and role == "user":
        joins = all(b["type"] == "tool_result" for b in last["content"])
    if joins:
        last["content"].append(block)
    else:
        messages.append({"role": role, "content": [block]})


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
