"""Fixtures of the MCP tests: the app in Daphne (tests/servers.py), its MCP URL for the shared
world, and the SDK's client for a user."""

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from tests.mcp.client import mcp_client, mcp_url
from tests.servers import Feed, api_token

WAIT = 30.0  # seconds a feed is watched for an event


def run(body: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
    return asyncio.run(body(*args))


@pytest.fixture
def url(asgi_server, live_world) -> str:
    return mcp_url(asgi_server, live_world.campaign.pk)


@pytest.fixture
def token(asgi_server, live_world) -> Callable[[str], str]:
    """A user's API token, as `POST /api/auth/token/` issues it (memoised per user)."""
    tokens: dict[str, str] = {}

    def of(username: str) -> str:
        if username not in tokens:
            tokens[username] = api_token(asgi_server, username)
        return tokens[username]

    return of


async def call(url: str, token: str, tool: str, arguments: dict[str, Any], **kw: Any) -> Any:
    """One tool call from a fresh client (as an agent that connects per task would)."""
    async with mcp_client(url, token, **kw) as client:
        return await client.call_tool(tool, arguments)


def called(url: str, token: str, tool: str, arguments: dict[str, Any], **kw: Any) -> Any:
    return run(call, url, token, tool, arguments, **kw)


def wait_for_event(feed: Feed, type: str, invocation: str) -> dict[str, Any]:
    """The feed's first `type` event of `invocation`, waited for up to WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for envelope in list(feed.events):
            if envelope["type"] == type and envelope.get("invocation") == invocation:
                return envelope
        time.sleep(0.02)
    raise AssertionError(f"no {type} of {invocation}: {json.dumps(feed.events)[:2000]}")
