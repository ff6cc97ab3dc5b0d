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


class RoundRobin(httpx2.AsyncBaseTransport):
    """A load balancer without sticky sessions, in the client: each request goes to the next
    of `ports` in turn (the same host), and `sent` records where each went."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.sent: list[tuple[int, str]] = []
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[len(self.sent) % len(self.ports)]
        self.sent.append((port, request.method))
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def mcp_client(
    url: str,
    token: str,
    *,
    mode: str = "auto",
    headers: dict[str, str] | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> AsyncIterator[Client]:
    """A connected `mcp.Client` (mode "auto": the modern era, as the SDK negotiates it with this
    server; "legacy": the initialize handshake), over `transport` if given."""
    sent = {"Authorization": f"Bearer {token}", **(headers or {})}
    timeout = httpx2.Timeout(30, read=60)
    async with httpx2.AsyncClient(headers=sent, timeout=timeout, transport=transport) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, client_info=CLIENT_INFO) as client:
            yield client
