"""The MCP endpoint's ASGI app: `/api/campaigns/{campaign_id}/mcp/`, Streamable HTTP, built on
the official SDK's low-level `Server` and its `StreamableHTTPSessionManager` in stateless mode,
so any web process answers any request of a client: no MCP session lives in a process
(docs/mcp.md#many-processes).

In front of the SDK, each request passes the gate, in this order (docs/mcp.md#auth):
a token in the query string is refused (400); an `Origin` that is not the site's own or a
trusted one is refused (403) by the websocket's very check (`web.ws_auth.origin_allowed`); the
API token (`Authorization: Bearer <token>`, or `Token <token>` as the REST API takes it, with its
TTL and revocation) is required (401 with `WWW-Authenticate`); requests are counted per user
against MCP_RATE (429 with `Retry-After`); the campaign must be one the user sees (404 for
anyone else, as the REST API answers a non-member); a GET (the stream of a stateful server)
is 405. What passes is handed to the SDK with the
caller attached to the ASGI scope, where the tool handlers read it.

The session manager needs its `run()` entered for the life of the process (its task group
serves every request). The SDK's ASGI docs enter it in the app's lifespan; Daphne speaks no
lifespan protocol, so `McpEndpoint` enters it itself, in the server's event loop, on the first
request, and keeps it entered until the process ends. Under a server that does send lifespan
events (uvicorn), `config.asgi` routes them here and the manager starts and stops with them.
"""

import asyncio
import ipaddress
import json
import re
import uuid
from typing import Any
from urllib.parse import parse_qsl

import mcp_types as types
from asgiref.sync import sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.db import close_old_connections
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from campaigns.selectors import campaign_get_visible
from core.errors import NotFound
from core.faults import RETRY_AFTER_SECONDS, UNAVAILABLE_DETAIL, is_unavailable
from web.mcp import calls
from web.mcp.tools import listing
from web.ws_auth import origin_allowed, origin_header, token_from_scope, user_for_token

ASGIApp = Any
MCP_PATH = re.compile(r"^/api/campaigns/(?P<campaign_id>[^/]+)/mcp/?$")
CALLER = "undoable.mcp.caller"  # the scope key the gate leaves the caller under
REALM = 'Bearer realm="undoable-gm"'
# Query parameters a client might carry a credential in: refused outright, never read.
CREDENTIAL_PARAMS = {"access_token", "token", "auth", "authorization", "api_key", "key"}
INSTRUCTIONS = (
    "The tools of one tabletop campaign. Every write is logged before it runs and can be "
    "undone exactly (undo_invocation, undo_turn); a call the campaign's approval policy holds "
    "answers status awaiting_approval and changes nothing until a human approves it on the "
    "campaign's page. begin_turn opens your unit of work. See docs/mcp.md."
)


class McpRateThrottle(SimpleRateThrottle):
    """MCP requests per user (MCP_RATE), counted in the default cache that every process
    shares, as the REST API's throttles count."""

    scope = "mcp"

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class _ThrottledRequest:
    """What a DRF throttle reads of a request: its user."""

    def __init__(self, user: Any) -> None:
        self.user = user


def _header(scope: dict[str, Any], name: bytes) -> str:
    return next((v.decode("latin1") for k, v in scope.get("headers", []) if k.lower() == name), "")


def _peer(scope: dict[str, Any]) -> str | None:
    client = scope.get("client") or ("",)
    try:
        return str(ipaddress.ip_address(client[0]))
    except ValueError:
        return None


def refusal(status: int, message: str, **headers: str) -> ASGIApp:
    """A JSON-RPC error (no request id) with an HTTP status, as the SDK answers its own."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}})
    raw = [(b"content-type", b"application/json")]
    raw += [(k.lower().replace("_", "-").encode(), v.encode()) for k, v in headers.items()]

    async def answer(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body.encode()})

    return answer


def _admit(user: Any, campaign_id: Any) -> ASGIApp | None:
    """The database half of the gate (in a worker thread): the rate, then the campaign. An
    unavailable database or cache is a 503 with `Retry-After`, as the REST API answers."""
    close_old_connections()
    try:
        return _admitted(user, campaign_id)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        return refusal(503, UNAVAILABLE_DETAIL, retry_after=str(RETRY_AFTER_SECONDS))
    finally:
        close_old_connections()


def _admitted(user: Any, campaign_id: Any) -> ASGIApp | None:
    throttle = McpRateThrottle()
    if not throttle.allow_request(_ThrottledRequest(user), None):
        wait = max(1, round(throttle.wait() or 1))
        return refusal(429, f"Too many requests; retry in {wait} s.", retry_after=str(wait))
    try:
        campaign_get_visible(campaign_id=campaign_id, user=user)
    except NotFound:
        return refusal(404, "Not found.")
    return None


async def gate(scope: dict[str, Any], campaign_id: str) -> ASGIApp | dict[str, Any]:
    """The refusal for this request, or its scope with the caller attached (module doc)."""
    query = parse_qsl(scope.get("query_string", b"").decode("latin1"), keep_blank_values=True)
    if any(key.lower() in CREDENTIAL_PARAMS for key, _ in query):
        detail = "A token in the query string is refused; send Authorization: Bearer <token>."
        return refusal(
            400,
            detail,
            www_authenticate=f'{REALM}, error="invalid_request", error_description="{detail}"',
        )
    if origin_header(scope) is not None and not origin_allowed(scope):
        return refusal(403, "This Origin may not use the MCP endpoint.")
    key = token_from_scope(scope, keywords=("bearer", "token"))
    if not key:
        return refusal(401, "Authentication required.", www_authenticate=REALM)
    user = await user_for_token(key)
    if isinstance(user, AnonymousUser):
        detail = "The token is invalid, expired or revoked; get one at POST /api/auth/token/."
        return refusal(
            401,
            detail,
            www_authenticate=f'{REALM}, error="invalid_token", error_description="{detail}"',
        )
    try:
        campaign = uuid.UUID(campaign_id)
    except ValueError:
        return refusal(404, "Not found.")
    refused = await sync_to_async(_admit, thread_sensitive=True)(user, campaign)
    if refused is not None:
        return refused
    if scope["method"] == "GET":
        # The stream a GET opens carries what a server sends outside any request; a stateless
        # server has nothing to send there, and the stream would stay open for good.
        return refusal(405, "Method Not Allowed: this server keeps no stream.", allow="POST")
    caller = calls.Caller(user=user, campaign_id=campaign, client="", ip=_peer(scope))
    return dict(scope, **{CALLER: (caller, _header(scope, b"user-agent"))})


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=listing())


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    caller, user_agent = ctx.request.scope[CALLER]
    meta = params.meta or ctx.meta or {}
    caller = calls.Caller(
        user=caller.user,
        campaign_id=caller.campaign_id,
        client=calls.client_name(meta, user_agent),
        ip=caller.ip,
    )
    run = sync_to_async(calls.call, thread_sensitive=True)
    return await run(caller, params.name, params.arguments, meta)


def mcp_server() -> Server:
    return Server(
        "undoable-gm",
        version="1.0.0",
        title="Undoable AI Game Master",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class McpEndpoint:
    """The gate in front of the SDK's session manager, which it keeps running (module doc)."""

    def __init__(self) -> None:
        self.manager = StreamableHTTPSessionManager(
            app=mcp_server(), stateless=True, json_response=True
        )
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    async def _serve(self) -> None:
        assert self._ready is not None and self._stop is not None
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()

    async def running(self) -> None:
        """Enter the session manager's `run()` once, in this event loop, for good."""
        if self._ready is None:
            self._ready, self._stop = asyncio.Event(), asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._serve())
        await self._ready.wait()

    async def lifespan(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.running()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._stop is not None and self._task is not None:
                    self._stop.set()
                    await self._task
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await self.lifespan(scope, receive, send)
        match = MCP_PATH.match(scope["path"])
        assert match is not None, "routed here by mcp_or"
        admitted = await gate(scope, match["campaign_id"])
        if not isinstance(admitted, dict):
            return await admitted(scope, receive, send)
        await self.running()
        await self.manager.handle_request(admitted, receive, send)


def mcp_or(other: ASGIApp, endpoint: McpEndpoint) -> ASGIApp:
    """HTTP to the MCP path goes to `endpoint`, everything else to `other` (Django)."""

    async def route(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if MCP_PATH.match(scope.get("path", "")):
            return await endpoint(scope, receive, send)
        return await other(scope, receive, send)

    return route
