"""Websocket clients for the consumer tests: real handshakes through the project's ASGI app."""

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from channels_redis.utils import create_pool
from django.conf import settings
from django.db import connections
from rest_framework.authtoken.models import Token

from audit.models import InvocationOrigin
from audit.services import invocation_dispatch, turn_undo
from config.asgi import application
from config.redis_layer import READER_POLL
from tests.conftest import signed_in

HOST = (b"host", b"testserver")
ORIGIN = (b"origin", b"http://testserver")
FOREIGN_ORIGIN = (b"origin", b"http://evil.example")
TIMEOUT = 5


def layer_pool() -> Any:
    """A new pool of connections to the Redis channel layer's server, made as the layer makes
    its own (its configured host and timeouts)."""
    [host] = get_channel_layer()._kwargs["hosts"]
    return create_pool(host)


def longest_layer_timeout() -> float:
    """The longest wait inside the Redis channel layer a silent socket runs into: the client's
    socket read and connect timeouts as its connections are really built (redis-py's defaults
    included), its subscription's health check, and its reader's poll (config/redis_layer.py)."""
    pool = layer_pool()
    connection = pool.connection_class(**pool.connection_kwargs)
    timeouts = (
        connection.socket_timeout,
        connection.socket_connect_timeout,
        connection.health_check_interval,
        READER_POLL,
    )
    return max(t for t in timeouts if t is not None)


@pytest_asyncio.fixture(autouse=True)
async def close_worker_connections() -> AsyncIterator[None]:
    """Database work of consumers and tests runs in asgiref's worker thread; its persistent
    connections (CONN_MAX_AGE) are closed so the test database can be dropped at the end."""
    yield
    await database_sync_to_async(connections.close_all)()


@database_sync_to_async
def session_cookie(user: Any) -> tuple[bytes, bytes]:
    """The cookie header a signed-in browser sends."""
    client = signed_in(user)
    name = settings.SESSION_COOKIE_NAME
    return (b"cookie", f"{name}={client.cookies[name].value}".encode())


@database_sync_to_async
def token_header(user: Any) -> tuple[bytes, bytes]:
    token, _ = Token.objects.get_or_create(user=user)
    return (b"authorization", f"Token {token.key}".encode())


async def open_socket(
    campaign_id: Any, headers: list[tuple[bytes, bytes]], query: str = ""
) -> tuple[WebsocketCommunicator, bool, Any]:
    """A handshake as every HTTP/1.1 client makes it: with a `Host` header, here `testserver`."""
    socket = WebsocketCommunicator(
        application, f"/ws/campaigns/{campaign_id}/{query}", headers=[HOST, *headers]
    )
    connected, detail = await socket.connect(timeout=TIMEOUT)
    if not connected:  # as a server does after a refusal, so the consumer ends here and now
        await socket.send_input({"type": "websocket.disconnect", "code": detail})
        await socket.wait(TIMEOUT)
    return socket, connected, detail


async def browser(campaign_id: Any, user: Any, query: str = "") -> WebsocketCommunicator:
    """A member's browser tab, connected, past the `hello` every socket starts with; `query`:
    what the page asks for in the socket's address (`?fragments=board`, as the page's does)."""
    headers = [ORIGIN, await session_cookie(user)]
    socket, connected, detail = await open_socket(campaign_id, headers, query)
    assert connected, f"handshake refused ({detail})"
    assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "hello"
    return socket


async def receive_until(socket: WebsocketCommunicator, type: str) -> list[dict[str, Any]]:
    """Every event up to and including the first of `type` (fails after TIMEOUT seconds)."""
    received = []
    while True:
        envelope = await socket.receive_json_from(timeout=TIMEOUT)
        received.append(envelope)
        if envelope["type"] == type:
            return received


def damage_goblin(world, turn, amount=5):
    return invocation_dispatch(
        campaign=world.campaign,
        actor=turn.actor,
        tool_name="modify_creature",
        input={"creature_id": world.goblin.pk, "hp_delta": -amount},
        turn=turn,
        model="test/model-1",
        source=InvocationOrigin.GM,
    )


@database_sync_to_async
def play_and_undo(world):
    """A turn with a tool call, then its undo: user, ai_tool_execution and system events."""
    turn = world.turn(message="I attack the goblin.")
    damage_goblin(world, turn)
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player, reason="oops")
    return turn
