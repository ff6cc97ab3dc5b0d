"""A local stand-in for an OpenAI-compatible Chat Completions server: no network, real wire
format, strict.

Every request is checked against the API's published rules (tests/gm/chat_api.py) and refused
as the API refuses it: 400 with `{"error": {"message", "type": "invalid_request_error", "param",
"code"}}`. A valid request gets the next scripted reply, streamed as the API streams: server-sent
`data:` lines of `chat.completion.chunk` objects (a first delta with the role, content deltas,
tool-call deltas that open a call with its index, id and name and then stream its arguments,
a last chunk with `finish_reason`), an optional usage chunk, then `data: [DONE]`.

A reply can also be what real servers send: every parallel call at `index` 0 with distinct ids
(Ollama, some vLLM/SGLang builds), arguments whole in one delta, or streamed and then repeated
whole, `finish_reason: "stop"` with
tool calls, no model name; or go wrong: cut short (no finish_reason, no [DONE]), stopped at
`length`, an HTTP error; and it can pace its text, call a test's hook, fall silent, and notice
when the client hangs up (`hung_up`, `sent`). A server that refuses `strict` tools
(`refuses_strict`) answers them 400, as some OpenAI-compatible servers do.

`requests` holds every body received, `refusals` every 400 given: the `openai_server` fixture
insists the client never sent anything the API refuses.
"""

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.gm.chat_api import Refused, check_request

VERSION = "gpt-gm-test-2026-01-01"  # the model the fake answers as
Ending = Literal["complete", "cut", "length"]
Variant = Literal["indexed", "index0", "whole", "repeat"]


@dataclass
class Call:
    name: str
    arguments: str  # the raw JSON string, as the model writes it (perhaps not valid JSON)


@dataclass
class Reply:
    text: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    ending: Ending = "complete"
    variant: Variant = "indexed"
    finish_reason: str | None = None  # instead of the usual one (stop / tool_calls)
    model: str = VERSION
    status: int = 200
    error: dict[str, Any] | None = None
    pace: float = 0.0
    hook: tuple[int, Callable[[], None]] | None = None
    stall: float = 0.0


class HungUp(Exception):
    """The client closed the connection while the fake was still streaming."""


def call(name: str, arguments: Any) -> Call:
    """A tool call; `arguments` as a dict (written as JSON) or a raw string."""
    return Call(name, arguments if isinstance(arguments, str) else json.dumps(arguments))


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.refusals: list[dict[str, Any]] = []
        self.refuses_strict = False
        self.hung_up = threading.Event()
        self.sent = 0
        self._replies: deque[Reply] = deque()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply(self, *text: str, calls: list[Call] | None = None, **how: Any) -> Reply:
        """A streamed reply: its text chunks, then its tool calls; `how` sets the other
        fields of Reply (ending, variant, finish_reason, model, pace, hook, stall)."""
        reply = Reply(text=list(text), calls=list(calls or []), **how)
        self._replies.append(reply)
        return reply

    def fail(self, status: int, message: str, type: str = "server_error") -> None:
        self._replies.append(
            Reply(
                status=status, error={"message": message, "type": type, "param": None, "code": None}
            )
        )

    def answer(self, body: Any) -> Reply:
        self.requests.append(body)
        try:
            check_request(body)
            if self.refuses_strict and any(
                t.get("function", {}).get("strict") for t in body.get("tools") or []
            ):
                raise Refused(
                    "This server does not support 'strict' function calling.", param="tools"
                )
        except Refused as refusal:
            error = {
                "message": str(refusal),
                "type": "invalid_request_error",
                "param": refusal.param,
                "code": refusal.code,
            }
            self.refusals.append(error)
            return Reply(status=400, error=error)
        if body.get("stream") is not True:
            return self._server_error("fake: stream only")
        if not self._replies:
            return self._server_error("fake: no reply scripted")
        return self._replies.popleft()

    @staticmethod
    def _server_error(message: str) -> Reply:
        error = {"message": message, "type": "server_error", "param": None, "code": None}
        return Reply(status=500, error=error)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `requests` and `refusals`."""

    def do_POST(self) -> None:
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        if self.path.split("?")[0] != "/v1/chat/completions":
            self._error(
                404,
                {
                    "message": f"Unknown request URL: POST {self.path}.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "unknown_url",
                },
            )
            return
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            self._error(
                401,
                {
                    "message": "You didn't provide an API key.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                },
            )
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            fake.requests.append(raw)
            self._error(
                400,
                {
                    "message": "We could not parse the JSON body of your request.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                },
            )
            return
        reply = fake.answer(body)
        if reply.status != 200:
            self._error(reply.status, reply.error or {})
            return
        try:
            _Stream(self, fake, len(fake.requests), body).send(reply)
        except (HungUp, BrokenPipeError, ConnectionResetError):
            fake.hung_up.set()

    def _error(self, status: int, error: dict[str, Any]) -> None:
        data = json.dumps({"error": error}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


class _Stream:
    """One streamed reply, chunked, as `data:` server-sent events."""

    def __init__(self, handler: _Handler, fake: FakeOpenAI, number: int, body: dict) -> None:
        self.handler = handler
        self.fake = fake
        self.number = number
        self.usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self.reply = Reply()

    def send(self, reply: Reply) -> None:
        h = self.handler
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream; charset=utf-8")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        self.reply = reply
        self.fake.sent = 0
        self._chunk({"role": "assistant", "content": ""})
        for text in reply.text:
            self._chunk({"content": text})
            self.fake.sent += 1
            self._paced()
        for index, tool_call in enumerate(reply.calls):
            self._call(index, tool_call)
        if reply.ending != "cut":
            self._chunk({}, finish_reason=self._finish_reason())
            if self.usage:
                self._data(
                    self._envelope(
                        [], usage={"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
                    )
                )
            self._raw(b"data: [DONE]\n\n")
        self.handler.wfile.write(b"0\r\n\r\n")

    def _finish_reason(self) -> str:
        reply = self.reply
        if reply.ending == "length":
            return "length"
        if reply.finish_reason is not None:
            return reply.finish_reason
        return "tool_calls" if reply.calls else "stop"

    def _call(self, index: int, tool_call: Call) -> None:
        reply = self.reply
        at = 0 if reply.variant == "index0" else index
        call_id = f"call_fake{self.number}x{index}"
        args = tool_call.arguments
        if reply.ending == "length" and tool_call is reply.calls[-1]:
            args = args[: len(args) // 2]  # the model ran out of tokens half-way
        opening = {
            "index": at,
            "id": call_id,
            "type": "function",
            "function": {"name": tool_call.name, "arguments": ""},
        }
        if reply.variant == "whole":
            opening["function"]["arguments"] = args
            self._chunk({"tool_calls": [opening]})
            return
        self._chunk({"tool_calls": [opening]})
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            if part:
                self._chunk({"tool_calls": [{"index": at, "function": {"arguments": part}}]})
        if reply.variant == "repeat":  # the whole arguments once more, as some servers end
            self._chunk({"tool_calls": [{"index": at, "function": {"arguments": args}}]})

    def _paced(self) -> None:
        reply = self.reply
        pause = reply.pace
        if reply.hook is not None and reply.hook[0] == self.fake.sent:
            reply.hook[1]()
            pause = max(pause, reply.stall)
        if not pause:
            return
        connection = self.handler.connection
        readable, _, _ = select.select([connection], [], [], pause)
        if readable and connection.recv(1, socket.MSG_PEEK) == b"":
            raise HungUp()

    def _envelope(self, choices: list[dict[str, Any]], usage: dict | None = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": f"chatcmpl-fake{self.number:04d}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.reply.model,
            "system_fingerprint": None,
            "choices": choices,
        }
        if self.usage:
            chunk["usage"] = usage
        return chunk

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        self._data(self._envelope([choice]))

    def _data(self, chunk: dict[str, Any]) -> None:
        self._raw(f"data: {json.dumps(chunk)}\n\n".encode())

    def _raw(self, payload: bytes) -> None:
        self.handler.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.handler.wfile.flush()
