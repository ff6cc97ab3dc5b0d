"""A local stand-in for the Anthropic Messages API: no network, real wire format, strict.

Every request is checked against the API's published rules (tests/gm/messages_api.py) and
refused as the API refuses it: 400 with `{"type": "error", "error": {"type":
"invalid_request_error", "message"}, "request_id"}`. A valid request gets the next scripted
reply, streamed as the API streams (chunked server-sent events: message_start, ping,
content_block_start / content_block_delta (text_delta, input_json_delta) / content_block_stop,
message_delta with the stop reason, message_stop). A reply can also go wrong the ways the real
one does: an HTTP error (529 overloaded), an `error` event mid-stream, a stream cut short
(a proxy timeout: the body ends cleanly, without message_delta/message_stop), a TCP reset
mid-stream, or `stop_reason: max_tokens` in the middle of a tool_use. A slow reply (`slow`) paces
its text chunks, calls a test's hook after one of them, and notices when the client hangs up
(`hung_up`, and `sent`: how many text chunks went out before it did).

`requests` holds every body received; `refusals` every 400 the fake gave, so a test (the
`claude` fixture does it for every Claude test) can insist the client never sent anything the
API refuses.
"""

import json
import select
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.gm.messages_api import Refused, check_request

VERSION = "claude-gm-test-20260101"  # the model version the fake answers as
Ending = Literal["complete", "cut", "reset", "error", "max_tokens"]
Block = tuple[str, Any]  # ("text", [chunks...]) or ("tool_use", (name, input))


@dataclass
class Reply:
    blocks: list[Block] = field(default_factory=list)
    ending: Ending = "complete"
    status: int = 200
    error: dict[str, str] | None = None  # sent as an HTTP error, or as an `error` event
    pace: float = 0.0  # seconds between text chunks
    hook: tuple[int, Callable[[], None]] | None = None  # called after that many text chunks
    stall: float = 0.0  # seconds of silence after the hook (a model thinking mid-sentence)


class HungUp(Exception):
    """The client closed the connection while the fake was still streaming."""


class FakeClaude:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.refusals: list[dict[str, Any]] = []
        self._replies: deque[Reply] = deque()
        self.hung_up = threading.Event()
        self.sent = 0  # text chunks of the current (or last) reply that went out
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply(self, *blocks: Block) -> None:
        """A complete streamed reply; its stop reason is tool_use when it has a tool_use."""
        self._replies.append(Reply(blocks=list(blocks)))

    def cut(self, *blocks: Block) -> None:
        """The blocks stream in full, then the body ends without message_delta/message_stop."""
        self._replies.append(Reply(blocks=list(blocks), ending="cut"))

    def reset(self, *blocks: Block) -> None:
        """The blocks stream, then the connection is reset (TCP RST) mid-body."""
        self._replies.append(Reply(blocks=list(blocks), ending="reset"))

    def truncate(self, *blocks: Block) -> None:
        """The output hits max_tokens in the last block (a tool_use's JSON stops half-way)."""
        self._replies.append(Reply(blocks=list(blocks), ending="max_tokens"))

    def slow(
        self,
        *blocks: Block,
        pace: float,
        hook: tuple[int, Callable[[], None]] | None = None,
        stall: float = 0.0,
    ) -> None:
        """A complete reply whose text chunks go out `pace` seconds apart; `hook` is (n, f): f
        is called once n text chunks went out, then the stream falls silent for `stall`
        seconds. Stops when the client hangs up (`hung_up`)."""
        self._replies.append(Reply(blocks=list(blocks), pace=pace, hook=hook, stall=stall))

    def fail(self, status: int, type: str, message: str) -> None:
        """An HTTP error answer, e.g. 529 overloaded_error."""
        self._replies.append(Reply(status=status, error={"type": type, "message": message}))

    def fail_mid_stream(self, chunks: list[str], type: str, message: str) -> None:
        """Text streams, then an `error` event ends the stream (HTTP status stays 200)."""
        self._replies.append(
            Reply(
                blocks=[("text", chunks)], ending="error", error={"type": type, "message": message}
            )
        )

    def answer(self, body: Any) -> Reply:
        """What the API does with this body: refuse it, or take the next scripted reply."""
        self.requests.append(body)
        try:
            check_request(body)
        except Refused as refusal:
            error = {"type": "invalid_request_error", "message": str(refusal)}
            self.refusals.append(error)
            return Reply(status=400, error=error)
        if body.get("stream") is not True:
            return Reply(status=500, error={"type": "api_error", "message": "fake: stream only"})
        if not self._replies:
            return Reply(status=500, error={"type": "api_error", "message": "fake: no reply"})
        return self._replies.popleft()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `requests` and `refusals`, not the server log."""

    def do_POST(self) -> None:
        fake: FakeClaude = self.server.fake  # type: ignore[attr-defined]
        number = len(fake.requests) + 1
        header_problem = self._header_problem()
        if header_problem is not None:
            self._error(*header_problem, number=number)
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            self._error(400, "invalid_request_error", "Invalid JSON in request body", number=number)
            return
        reply = fake.answer(body)
        if reply.status != 200:
            self._error(reply.status, **(reply.error or {}), number=number)
            return
        try:
            _Stream(self, number).send(reply)
        except (HungUp, BrokenPipeError, ConnectionResetError):
            fake.hung_up.set()

    def _header_problem(self) -> tuple[int, str, str] | None:
        if self.path.split("?")[0] != "/v1/messages":
            return 404, "not_found_error", f"Not found: {self.path}"
        if not (self.headers.get("x-api-key") or self.headers.get("Authorization")):
            return 401, "authentication_error", "x-api-key header is required"
        if not self.headers.get("anthropic-version"):
            return 400, "invalid_request_error", "anthropic-version: header is required"
        if "application/json" not in (self.headers.get("Content-Type") or ""):
            return 400, "invalid_request_error", "Content-Type must be application/json"
        return None

    def _error(self, status: int, type: str, message: str, *, number: int) -> None:
        """The API's error shape: a top-level `error` with type and message, a request id."""
        request_id = f"req_fake{number:04d}"
        payload = {"type": "error", "error": {"type": type, "message": message}}
        data = json.dumps({**payload, "request_id": request_id}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", request_id)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


class _Stream:
    """One streamed reply, in chunked transfer encoding as the API sends it."""

    def __init__(self, handler: _Handler, number: int) -> None:
        self.handler = handler
        self.number = number
        self.fake: FakeClaude = handler.server.fake  # type: ignore[attr-defined]
        self.reply = Reply()

    def send(self, reply: Reply) -> None:
        h = self.handler
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("request-id", f"req_fake{self.number:04d}")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        self.reply = reply
        self.fake.sent = 0
        self._event("message_start", {"message": self._message()})
        self._event("ping", {})
        last = len(reply.blocks) - 1
        for index, (kind, value) in enumerate(reply.blocks):
            if kind == "text":
                self._text_block(index, value)
            else:
                self._tool_use_block(
                    index, *value, half=reply.ending == "max_tokens" and index == last
                )
        self._finish(reply)

    def _finish(self, reply: Reply) -> None:
        if reply.ending == "reset":
            self._reset()
            return
        if reply.ending == "error":
            self._event("error", {"error": reply.error})
        elif reply.ending != "cut":
            self._event(
                "message_delta", {"delta": self._stop(reply), "usage": {"output_tokens": 20}}
            )
            self._event("message_stop", {})
        self.handler.wfile.write(b"0\r\n\r\n")  # the body ends cleanly, complete or not

    @staticmethod
    def _stop(reply: Reply) -> dict[str, Any]:
        if reply.ending == "max_tokens":
            reason = "max_tokens"
        elif any(kind == "tool_use" for kind, _ in reply.blocks):
            reason = "tool_use"
        else:
            reason = "end_turn"
        return {"stop_reason": reason, "stop_sequence": None}

    def _message(self) -> dict[str, Any]:
        return {
            "id": f"msg_fake{self.number:04d}",
            "type": "message",
            "role": "assistant",
            "model": VERSION,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }

    def _event(self, type: str, data: dict[str, Any]) -> None:
        payload = f"event: {type}\ndata: {json.dumps({'type': type, **data})}\n\n".encode()
        self.handler.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.handler.wfile.flush()

    def _reset(self) -> None:
        """SO_LINGER 0 then close: the kernel sends RST instead of a clean FIN."""
        connection = self.handler.connection
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()

    def _text_block(self, index: int, chunks: list[str]) -> None:
        self._event(
            "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
        )
        for chunk in chunks:
            delta = {"type": "text_delta", "text": chunk}
            self._event("content_block_delta", {"index": index, "delta": delta})
            self.fake.sent += 1
            self._paced()
        self._event("content_block_stop", {"index": index})

    def _paced(self) -> None:
        """After a text chunk of a slow reply: the test's hook if its time has come, then the
        pause, during which a client that hangs up (EOF on our socket) is noticed."""
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

    def _tool_use_block(self, index: int, name: str, input: dict[str, Any], *, half: bool) -> None:
        block = {
            "type": "tool_use",
            "id": f"toolu_{self.number}_{index}",
            "name": name,
            "input": {},
        }
        self._event("content_block_start", {"index": index, "content_block": block})
        raw = json.dumps(input)
        parts = [raw[: len(raw) // 2]] if half else [raw[: len(raw) // 2], raw[len(raw) // 2 :]]
        for part in parts:
            delta = {"type": "input_json_delta", "partial_json": part}
            self._event("content_block_delta", {"index": index, "delta": delta})
        self._event("content_block_stop", {"index": index})
