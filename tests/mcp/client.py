"""The SDK's own MCP client, pointed at the endpoint over real HTTP with a token header: what
the tests (and scripts/mcp_session.py) drive the server with."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

CLIENT_INFO = types.Implementation(name="table-agent", version="0.3")


def mcp_url(base_url: str, campaign_id: Any) -> str:
    return f"{base_url}/api/campaigns/{campaign_id}/mcp/"


@asynccontextmanager
async def mcp_client(
    url: str, token: str, *, mode: str = "auto", headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """A connected `mcp.Client` (mode "auto": the modern era, as the SDK negotiates it with this
    server; "legacy": the initialize handshake)."""
    sent = {"Authorization": f"Bearer {token}", **(headers or {})}
    async with httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(30, read=60)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, client_info=CLIENT_INFO) as client:
            yield client
