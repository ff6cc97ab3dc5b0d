"""The websocket stack's session middleware (`web.ws_auth.WebsocketSessionMiddleware`): a
browser's socket is signed in by its session cookie as under channels' own, but the frames it
is sent go straight on, without reading the session each time (channels' wrapper reads its
`modified` and `is_empty()` on every message, though it saves on HTTP responses alone)."""

from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async
from channels.sessions import CookieMiddleware
from django.contrib.sessions.backends.db import SessionStore

from tests.realtime.conftest import TIMEOUT, session_cookie
from web.ws_auth import WebsocketSessionMiddleware, websocket_stack

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


class WatchedSession(SessionStore):
    """A session that counts the reads of what channels' wrapper asks before a save."""

    reads = 0

    @property
    def modified(self) -> bool:
        WatchedSession.reads += 1
        return self.__dict__["modified"]

    @modified.setter
    def modified(self, value: bool) -> None:
        self.__dict__["modified"] = value

    def is_empty(self) -> bool:
        WatchedSession.reads += 1
        return super().is_empty()


async def frames_sent(app: Any, scope: dict[str, Any], frames: list[dict[str, Any]]) -> list:
    """What `app`'s inner application sends (`frames`, after accepting) reaches the server as
    it was sent; the session's reads meanwhile are counted."""
    communicator = ApplicationCommunicator(app, scope)
    await communicator.send_input({"type": "websocket.connect"})
    out = [await communicator.receive_output(TIMEOUT) for _ in range(len(frames) + 1)]
    await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
    await communicator.wait(TIMEOUT)
    return out


def sender(frames: list[dict[str, Any]], seen: dict[str, Any]) -> Any:
    """An inner application that notes the user and session it was given, watches the session
    and sends `frames` once accepted."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "websocket.connect"
        seen["user"] = scope["user"].get_username()
        scope["session"]._wrapped.__class__ = WatchedSession
        WatchedSession.reads = 0
        await send({"type": "websocket.accept"})
        for frame in frames:
            await send(frame)
        seen["reads"] = WatchedSession.reads
        assert (await receive())["type"] == "websocket.disconnect"

    return app


async def test_a_browsers_frames_go_out_as_sent_without_reading_its_session(world):
    """Through the whole stack, as a signed-in browser's socket: the user comes from the
    cookie, and a hundred frames are sent unchanged with no read of the session."""
    frames = [{"type": "websocket.send", "text": f'{{"seq": {i}}}'} for i in range(100)]
    seen: dict[str, Any] = {}
    scope = {
        "type": "websocket",
        "scheme": "ws",
        "path": f"/ws/campaigns/{world.campaign.pk}/",
        "query_string": b"",
        "headers": [
            (b"host", b"localhost:8000"),
            (b"origin", b"http://localhost:8000"),
            await session_cookie(world.player),
        ],
        "subprotocols": [],
    }

    out = await frames_sent(websocket_stack(sender(frames, seen)), scope, frames)

    assert out == [{"type": "websocket.accept"}, *frames]
    assert seen == {"user": world.player.get_username(), "reads": 0}


async def test_an_http_response_still_saves_a_changed_session(world):
    """What channels' wrapper does on `http.response.start` is kept: a changed session is
    saved and its cookie set."""
    cookie = await session_cookie(world.player)
    key = cookie[1].decode().split("=", 1)[1]
    sent: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await scope["session"].aset("seen", "yes")
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def server_send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    scope = {"type": "http", "headers": [cookie]}
    await CookieMiddleware(WebsocketSessionMiddleware(app))(scope, receive, server_send)

    stored = await database_sync_to_async(lambda: SessionStore(session_key=key).load())()
    assert stored["seen"] == "yes"
    assert [name for name, _ in sent[0]["headers"]] == [b"Set-Cookie"]
