"""Who is on the other end of a websocket: browsers by session cookie, other clients by token.

Origin validation protects cookie-authenticated browsers from cross-site websocket hijacking.
A browser always sends `Origin` and cannot set an `Authorization` header on a websocket, so a
handshake without `Origin` that carries a token header cannot come from a hijacked browser: it
is let past origin validation and authenticated by its token alone. Everything else (every
handshake with an `Origin`, every handshake relying on the session cookie) is origin-checked.

The origin check is the one Django's CSRF protection applies to a cross-origin POST, so a page
may open the feed exactly when it may change the game: the `Origin` must be the handshake's own
origin (http for ws, https for wss, and the `Host` header, which must be in ALLOWED_HOSTS) -
scheme, host and port all equal - or be listed in CSRF_TRUSTED_ORIGINS (`https://*.example.com`
admits subdomains on that scheme and port). Behind a proxy that terminates TLS, run Daphne with
`--proxy-headers` (the scheme then comes from X-Forwarded-Proto) or list the public origin in
CSRF_TRUSTED_ORIGINS.
"""

from typing import Any
from urllib.parse import urlsplit

from channels.auth import AuthMiddleware
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

from web.accounts import token_live
from web.consumers import REFUSED, refusal

ASGIApp = Any


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin1")
    return None


def token_from_scope(scope: dict[str, Any], keywords: tuple[str, ...] = ("token",)) -> str | None:
    """The key of an `Authorization: Token <key>` header (or of another of the `keywords`,
    lower case: the MCP endpoint takes `Bearer` too), or None when there is none."""
    header = _header(scope, b"authorization")
    if header is None:
        return None
    keyword, _, key = header.strip().partition(" ")
    if keyword.lower() not in keywords:
        return None
    return key.strip()


@database_sync_to_async
def user_for_token(key: str) -> Any:
    token = token_live(key)
    return AnonymousUser() if token is None else token.user


class TokenAuthMiddleware(BaseMiddleware):
    """A token header decides the user outright: a bad token is anonymous, never the session's
    user, so a client that meant to authenticate by token fails closed."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        key = token_from_scope(scope)
        if key is not None:
            scope = dict(scope, user=await user_for_token(key))
        return await super().__call__(scope, receive, send)


def own_origin(scope: dict[str, Any]) -> str | None:
    """The origin of a page served by this very host, or None when the Host is not ours."""
    host = _header(scope, b"host")
    domain, _ = split_domain_port(host or "")
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    return f"{scheme}://{host}"


def trusted_origin(origin: str) -> bool:
    """Listed in CSRF_TRUSTED_ORIGINS, exactly or under a `scheme://*.domain` entry."""
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    return any(
        is_same_domain(parsed.netloc, trusted.netloc[1:])
        for trusted in map(urlsplit, settings.CSRF_TRUSTED_ORIGINS)
        if trusted.scheme == parsed.scheme and trusted.netloc.startswith("*")
    )


def origin_header(scope: dict[str, Any]) -> str | None:
    return _header(scope, b"origin")


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the request's `Origin` is the site's own or a trusted one (see module doc); a
    missing `Origin` is not."""
    origin = origin_header(scope)
    return origin is not None and (origin == own_origin(scope) or trusted_origin(origin))


class SameOriginValidator:
    """Admits a handshake only from the site's own origin or a trusted one (see module doc);
    anything else, a missing `Origin` included, is refused with REFUSED."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner
        self.refuse = refusal(REFUSED)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if origin_allowed(scope):
            return await self.inner(scope, receive, send)
        return await self.refuse(scope, receive, send)


class HeaderClientsSkipOriginCheck:
    """Routes originless token-header handshakes around origin validation (see module doc)."""

    def __init__(self, *, browsers: ASGIApp, header_clients: ASGIApp) -> None:
        self.browsers = browsers
        self.header_clients = header_clients

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if origin_header(scope) is None and token_from_scope(scope) is not None:
            return await self.header_clients(scope, receive, send)
        return await self.browsers(scope, receive, send)


class _FramesPastTheSession(InstanceSessionWrapper):
    """Channels' session wrapper, but a message it would not save the session on (every
    websocket message: it saves on `http.response.start` alone) goes straight on. Channels'
    own reads the session's `modified` and `is_empty()` through its `LazyObject` before it
    looks at the message's type: on a feed that is every frame to every socket, a sixth of a
    server's time in a fan-out (docs/performance.md, `asgi_servers.py`)."""

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] not in self.save_message_types:
            return await self.real_send(message)
        return await super().send(message)


class WebsocketSessionMiddleware(SessionMiddleware):
    """`SessionMiddleware` with `_FramesPastTheSession` for its wrapper."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        wrapper = _FramesPastTheSession(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, wrapper.send)


def websocket_stack(inner: ASGIApp) -> ASGIApp:
    """The websocket application: origin validation and session auth for browsers
    (docs/operations.md), token-header auth for every client. The session auth is channels'
    `AuthMiddlewareStack` with `WebsocketSessionMiddleware` for its session middleware."""
    authenticated = CookieMiddleware(
        WebsocketSessionMiddleware(AuthMiddleware(TokenAuthMiddleware(inner)))
    )
    return HeaderClientsSkipOriginCheck(
        browsers=SameOriginValidator(authenticated), header_clients=authenticated
    )
