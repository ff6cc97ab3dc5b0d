"""The origin check (docs/api.md#the-live-feed-websocket): scheme, host and port of `Origin` must be
the site's own (or a trusted origin), for every browser handshake; only originless token clients
skip it."""

from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator

from config.asgi import application
from tests.realtime.conftest import TIMEOUT, session_cookie, token_header
from web.consumers import REFUSED

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def admitted(world: Any, headers: list[tuple[bytes, bytes]], scheme: str = "ws") -> bool:
    """Whether the handshake is accepted; a refusal must carry REFUSED."""
    scope = {
        "type": "websocket",
        "scheme": scheme,
        "path": f"/ws/campaigns/{world.campaign.pk}/",
        "query_string": b"",
        "headers": headers,
        "subprotocols": [],
    }
    app = ApplicationCommunicator(application, scope)
    await app.send_input({"type": "websocket.connect"})
    reply = await app.receive_output(TIMEOUT)
    if reply["type"] == "websocket.close":
        assert reply["code"] == REFUSED
        return False
    await app.send_input({"type": "websocket.disconnect", "code": 1000})
    await app.wait(TIMEOUT)
    return True


def origin_headers(host: str, origin: str | None) -> list[tuple[bytes, bytes]]:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return headers


@pytest.mark.parametrize(
    ("scheme", "origin", "expected"),
    [
        ("ws", "http://localhost:8000", True),
        ("wss", "https://localhost:8000", True),
        ("ws", "http://localhost:9999", False),
        ("ws", "http://localhost", False),
        ("ws", "https://localhost:8000", False),
        ("wss", "http://localhost:8000", False),
        ("ws", "http://127.0.0.1:8000", False),
        ("ws", "http://evil.example:8000", False),
        ("ws", "null", False),
        ("ws", None, False),
    ],
    ids=[
        "same origin",
        "same origin over TLS",
        "other port",
        "default port for an explicit one",
        "other scheme",
        "plain origin for a TLS socket",
        "other allowed host",
        "other host",
        "opaque origin",
        "no origin",
    ],
)
async def test_a_session_cookie_is_admitted_only_from_the_sites_own_origin(
    world, scheme, origin, expected
):
    cookie = await session_cookie(world.player)
    headers = [*origin_headers("localhost:8000", origin), cookie]
    assert await admitted(world, headers, scheme) is expected


async def test_a_host_outside_allowed_hosts_is_no_origin_of_ours(world):
    """DNS rebinding: a hostile name pointed at us sends matching Host and Origin."""
    headers = [
        *origin_headers("evil.example", "http://evil.example"),
        await session_cookie(world.player),
    ]
    assert not await admitted(world, headers)


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        ("https://app.example.com", True),
        ("https://table.games.example", True),
        ("https://app.example.com:8443", False),
        ("http://app.example.com", False),
        ("http://table.games.example", False),
    ],
)
async def test_csrf_trusted_origins_are_admitted_by_scheme_host_and_port(
    world, settings, origin, expected
):
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com", "https://*.games.example"]
    headers = [*origin_headers("localhost:8000", origin), await session_cookie(world.player)]
    assert await admitted(world, headers, "wss") is expected


@pytest.mark.parametrize(
    ("origin", "expected"),
    [(None, True), ("http://localhost:8000", True), ("http://localhost:9999", False)],
    ids=["no origin", "same origin", "other port"],
)
async def test_a_token_client_may_omit_origin_but_not_send_a_foreign_one(world, origin, expected):
    headers = [*origin_headers("localhost:8000", origin), await token_header(world.player)]
    assert await admitted(world, headers) is expected
