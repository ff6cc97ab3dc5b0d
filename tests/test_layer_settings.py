"""The channel layer: that group memberships outlive the sockets the app keeps open, and the
Redis layer's socket timeouts."""

import asyncio
import re

import pytest
from daphne.cli import CommandLineInterface
from django.conf import settings

from tests.test_settings import ROOT, manage


def test_the_layer_gets_the_configured_timeouts():
    """Every connection the layer makes (its publishes, its subscriptions) has them: a dead Redis
    fails them, never hangs them."""
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        "from channels.layers import get_channel_layer as g; "
        "from channels_redis.utils import create_pool; "
        "[host] = g()._kwargs['hosts']; c = create_pool(host).connection_kwargs; "
        "print(c['socket_timeout'], c['socket_connect_timeout'])",
        REDIS_SOCKET_TIMEOUT="12.5",
        REDIS_CONNECT_TIMEOUT="3",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["12.5", "3.0"]


def test_a_group_membership_outlives_every_socket_the_app_keeps_open():
    """The app closes each socket after WEBSOCKET_TIMEOUT (config.asgi.closed_after, whatever the
    server: uvicorn keeps a socket for ever) and the page opens a new one, which joins again; a
    membership that lapsed first would leave an open socket deaf, silently. Daphne, where it
    runs, closes its sockets no sooner than that."""
    web = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line[:4] == "web:")
    args = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", web).split()  # the ${VAR:-default}s unset
    if args[1] == "daphne":
        timeout = CommandLineInterface().parser.parse_args(args[2:]).websocket_timeout
        assert timeout >= settings.WEBSOCKET_TIMEOUT
    config = settings.CHANNEL_LAYERS["default"].get("CONFIG", {})
    group_expiry = config.get("group_expiry", settings.GROUP_EXPIRY)
    assert group_expiry >= settings.GROUP_EXPIRY > settings.WEBSOCKET_TIMEOUT


async def a_socket(lifetime: float, *client: dict) -> tuple[list[dict], list[dict]]:
    """A consumer's socket under `closed_after(lifetime)`, the client sending `client` after its
    connect: (what the app sent the server, the disconnect the consumer received)."""
    from config.asgi import closed_after

    sent, received, incoming = [], [], asyncio.Queue()
    for message in ({"type": "websocket.connect"}, *client):
        incoming.put_nowait(message)

    async def consumer(scope, receive, send):
        await send({"type": "websocket.accept"})
        while (message := await receive())["type"] != "websocket.disconnect":
            pass
        received.append(message)

    async def send(message):
        sent.append(message)

    app = closed_after(lifetime, consumer)
    await asyncio.wait_for(app({"type": "websocket"}, incoming.get, send), timeout=10)
    return [m for m in sent if m["type"] == "websocket.close"], received


@pytest.mark.asyncio
async def test_the_app_closes_a_socket_at_the_end_of_its_lifetime():
    """`closed_after`: past its lifetime a socket gets a close (1001, going away) and its
    consumer a disconnect; a socket the client closed first gets no close from the app."""
    closes, received = await a_socket(0.01)
    assert closes == [{"type": "websocket.close", "code": 1001}]
    assert received == [{"type": "websocket.disconnect", "code": 1001}]
    gone = {"type": "websocket.disconnect", "code": 1000}
    assert await a_socket(3600, {"type": "websocket.receive", "text": "hi"}, gone) == ([], [gone])
