"""Websocket clients for the consumer tests: real handshakes through the project's ASGI app."""

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client
from rest_framework.authtoken.models import Token

from config.asgi import application

ORIGIN = (b"origin", b"http://testserver")
FOREIGN_ORIGIN = (b"origin", b"http://evil.example")
TIMEOUT = 5


@pytest_asyncio.fixture(autouse=True)
async def close_worker_connections() -> AsyncIterator[None]:
    """Database work of consumers and tests runs in asgiref's worker thread; its persistent
    connections (CONN_MAX_AGE) are closed so the test database can be dropped at the end."""
    yield
    await database_sync_to_async(connections.close_all)()


@database_sync_to_async
def session_cookie(user: Any) -> tuple[bytes, bytes]:
    """The cookie header a signed-in browser sends."""
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return (b"cookie", f"{name}={client.cookies[name].value}".encode())


@database_sync_to_async
def token_header(user: Any) -> tuple[bytes, bytes]:
    token, _ = Token.objects.get_or_create(user=user)
    return (b"authorization", f"Token {token.key}".encode())


async def open_socket(
    campaign_id: Any, headers: list[tuple[bytes, bytes]]
) -> tuple[WebsocketCommunicator, bool, Any]:
    socket = WebsocketCommunicator(application, f"/ws/campaigns/{campaign_id}/", headers=headers)
    connected, detail = await socket.connect(timeout=TIMEOUT)
    return socket, connected, detail


async def browser(campaign_id: Any, user: Any) -> WebsocketCommunicator:
    """A member's browser tab, connected."""
    socket, connected, detail = await open_socket(campaign_id, [ORIGIN, await session_cookie(user)])
    assert connected, f"handshake refused ({detail})"
    return socket


async def receive_until(socket: WebsocketCommunicator, type: str) -> list[dict[str, Any]]:
    """Every event up to and including the first of `type` (fails after TIMEOUT seconds)."""
    received = []
    while True:
        envelope = await socket.receive_json_from(timeout=TIMEOUT)
        received.append(envelope)
        if envelope["type"] == type:
            return received
