"""A local stand-in for the Anthropic Messages API: no network, real wire format.

It records every request body and answers each with the next scripted reply, streamed as the
server-sent events the real API emits (message_start, content_block_start/delta/stop with
text_delta and input_json_delta, message_delta with the stop reason, message_stop), so the
official SDK parses it exactly as it would parse Claude.
"""

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VERSION = "claude-gm-test-20260101"  # the model version the fake answers as


@dataclass
class Reply:
    blocks: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 200
    error: dict[str, str] | None = None  # sent as an HTTP error, or mid-stream after `blocks`


class FakeClaude:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._replies: deque[Reply] = deque()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
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

    def reply(self, *blocks: tuple[str, Any]) -> None:
        """Queue a streamed reply: ("text", [chunks...]) and ("tool_use", (name, input))."""
        self._replies.append(Reply(blocks=list(blocks)))

    def fail(self, status: int, type: str, message: str) -> None:
        self._replies.append(Reply(status=status, error={"type": type, "message": message}))

    def fail_mid_stream(self, chunks: list[str], type: str, message: str) -> None:
        self._replies.append(
            Reply(blocks=[("text", chunks)], error={"type": type, "message": message})
        )

    def next_reply(self) -> Reply:
        if not self._replies:
            return Reply(status=500, error={"type": "api_error", "message": "no reply scripted"})
        return self._replies.popleft()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `requests`, not the server log."""

    def do_POST(self) -> None:
        fake: FakeClaude = self.server.fake  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        fake.requests.append(body)
        reply = fake.next_reply()
        if reply.status != 200:
            self._json(reply.status, {"type": "error", "error": reply.error})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self._stream(reply)
        self.close_connection = True

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _event(self, type: str, data: dict[str, Any]) -> None:
        self.wfile.write(f"event: {type}\ndata: {json.dumps({'type': type, **data})}\n\n".encode())
        self.wfile.flush()

    def _stream(self, reply: Reply) -> None:
        self._event(
            "message_start",
            {
                "message": {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": VERSION,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                }
            },
        )
        for index, (kind, value) in enumerate(reply.blocks):
            if kind == "text":
                self._text_block(index, value)
            else:
                self._tool_use_block(index, *value)
        if reply.error is not None:
            self._event("error", {"error": reply.error})
            return
        uses = any(kind == "tool_use" for kind, _ in reply.blocks)
        self._event(
            "message_delta",
            {
                "delta": {"stop_reason": "tool_use" if uses else "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
        )
        self._event("message_stop", {})

    def _text_block(self, index: int, chunks: list[str]) -> None:
        self._event("content_block_start", {"index": index, "content_block": _empty_text()})
        for chunk in chunks:
            delta = {"type": "text_delta", "text": chunk}
            self._event("content_block_delta", {"index": index, "delta": delta})
        self._event("content_block_stop", {"index": index})

    def _tool_use_block(self, index: int, name: str, input: dict[str, Any]) -> None:
        number = len(self.server.fake.requests)  # type: ignore[attr-defined]
        block = {"type": "tool_use", "id": f"toolu_{number}_{index}", "name": name, "input": {}}
        self._event("content_block_start", {"index": index, "content_block": block})
        raw = json.dumps(input)
        for part in (raw[: len(raw) // 2], raw[len(raw) // 2 :]):
            delta = {"type": "input_json_delta", "partial_json": part}
            self._event("content_block_delta", {"index": index, "delta": delta})
        self._event("content_block_stop", {"index": index})


def _empty_text() -> dict[str, Any]:
    return {"type": "text", "text": ""}
