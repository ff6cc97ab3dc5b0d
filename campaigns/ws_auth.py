"""Who is on the other end of a websocket: browsers by session cookie, other clients by token.

Origin validation protects cookie-authenticated browsers from cross-site websocket hijacking.
A browser always sends `Origin` and cannot set an `Authorization` header on a websocket, so a
handshake without `Origin` that carries a token header cannot come from a hijacked browser: it
is let past origin validation and authenticated by its token alone. Everything else (every
handshake with an `Origin`, every handshake relying on the session cookie) is origin-checked.
"""

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import AllowedHostsOriginValidator
from django.contrib.auth.models import AnonymousUser
from rest_framework.authtoken.models import Token

from campaigns.accounts import token_expired

ASGIApp = Any


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin1")
    return None


def token_from_scope(scope: dict[str, Any]) -> str | None:
    """The key of an `Authorization: Token <key>` header, or None when there is none."""
    header = _header(scope, b"authorization")
    if header is None:
        return None
    keyword, _, key = header.strip().partition(" ")
    if keyword.lower() != "token":
        return None
    return key.strip()


@database_sync_to_async
def user_for_token(key: str) -> Any:
    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active or token_expired(token):
        return AnonymousUser()
    return token.user


class TokenAuthMiddleware(BaseMiddleware):
    """A token header decides the user outright: a bad token is anonymous, never the session's
    user, so a client that meant to authenticate by token fails closed."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        key = token_from_scope(scope)
        if key is not None:
            scope = dict(scope, user=await user_for_token(key))
        return await super().__call__(scope, receive, send)


class HeaderClientsSkipOriginCheck:
    """Routes originless token-header handshakes around origin validation (see module doc)."""

    def __init__(self, *, browsers: ASGIApp, header_clients: ASGIApp) -> None:
        self.browsers = browsers
        self.header_clients = header_clients

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if _header(scope, b"origin") is None and token_from_scope(scope) is not None:
            return await self.header_clients(scope, receive, send)
        return await self.browsers(scope, receive, send)


def websocket_stack(inner: ASGIApp) -> ASGIApp:
    """The websocket application: origin validation and session auth for browsers (SPEC §9),
    token-header auth for every client."""
    authenticated = AuthMiddlewareStack(TokenAuthMiddleware(inner))
    return HeaderClientsSkipOriginCheck(
        browsers=AllowedHostsOriginValidator(authenticated), header_clients=authenticated
    )
