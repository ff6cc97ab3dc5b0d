"""The ASGI entry point: Django for HTTP, the MCP endpoint beside it
(`/api/campaigns/{id}/mcp/`, `web.mcp.app`: the official SDK's Streamable HTTP server), the
campaign feed for websockets. It runs under uvicorn (the Procfile) or Daphne (the tests' servers,
`manage.py runserver`): the lifespan events uvicorn sends start and stop the MCP session manager;
Daphne sends none (the manager starts on first use).

Websockets sit behind a same-origin check and `AuthMiddlewareStack` (session cookie), with
`Authorization: Token` header auth for non-browser clients (`web.ws_auth`), and are closed after
settings.WEBSOCKET_TIMEOUT (`closed_after`) under either server.

HTTP runs the middleware chain and the view in one worker thread (`OneHopASGIHandler`).

Once everything is imported, the objects made so far (modules, classes, settings, URL patterns:
hundreds of thousands, alive for the life of the process) are moved out of the garbage
collector's reach (`gc.freeze`). Otherwise every full collection walks them all, a pause in the
thread that runs every websocket send, and an event sent during it reaches its sockets that much
later (the figures, without and with the freeze:
docs/performance.md#ws_fanoutpy-an-undo-reaching-10-50-200-websocket-clients).
"""

import asyncio
import gc
import os
from typing import Any

import django
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class OneHopASGIHandler(ASGIHandler):
    """Django's ASGI handler with the middleware chain built synchronous and entered once.

    Django builds an async chain under ASGI and crosses between the event loop and the request's
    worker thread wherever a middleware is sync-only (WhiteNoise), for each sync
    `process_request` / `process_view` / `process_response` of the others, and for the (sync)
    view: 16 crossings for a plain page, each a hand-over through the event loop, which under
    load is the busiest thread in the server. Every view here is synchronous, so the chain is
    built as WSGI builds it and the event loop hands the request to the worker thread once
    (thread sensitive: in the request's own thread, as Django's async path runs sync code): a
    request costs the server less CPU, and the event loop, which also sends every websocket
    event, is spared fifteen hand-overs per request."""

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup(set_prefix=False)
django_asgi_app = OneHopASGIHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from web.mcp.app import McpEndpoint, mcp_or  # noqa: E402
from web.routing import websocket_urlpatterns  # noqa: E402
from web.ws_auth import websocket_stack  # noqa: E402

mcp_endpoint = McpEndpoint()


def closed_after(seconds: float, app: Any) -> Any:
    """`app` with each websocket closed after `seconds` (code 1001, "going away"), whatever
    server runs it: the page opens a new socket, which joins its campaign's group anew, so a
    group membership (settings.GROUP_EXPIRY, longer) never lapses under a socket still open.
    Daphne closes its sockets so itself (its --websocket_timeout); uvicorn keeps them for ever."""

    async def lifetime(scope: dict[str, Any], receive: Any, send: Any) -> None:
        loop = asyncio.get_running_loop()
        expired = loop.create_future()
        timer = loop.call_later(seconds, lambda: expired.done() or expired.set_result(None))
        open_ = [True]  # neither the app nor the client has closed it yet

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "websocket.close":
                open_[0] = False
            await send(message)

        async def receiving() -> dict[str, Any]:
            incoming = asyncio.ensure_future(receive())
            try:
                await asyncio.wait([incoming, expired], return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                incoming.cancel()
                raise
            if incoming.done():
                return incoming.result()
            incoming.cancel()
            if open_[0]:
                open_[0] = False
                await send({"type": "websocket.close", "code": 1001})
            return {"type": "websocket.disconnect", "code": 1001}

        try:
            await app(scope, receiving, sending)
        finally:
            timer.cancel()

    return lifetime


application = ProtocolTypeRouter(
    {
        "http": mcp_or(django_asgi_app, mcp_endpoint),
        "websocket": closed_after(
            settings.WEBSOCKET_TIMEOUT, websocket_stack(URLRouter(websocket_urlpatterns))
        ),
        "lifespan": mcp_endpoint,  # its session manager starts and stops with the server
    }
)
gc.freeze()
