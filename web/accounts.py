"""Who gets in, and how often: API tokens with a lifetime, the sign-up rate limit, and the answer
to a locked-out sign-in (docs/api.md).

Failed sign-ins are counted by django-axes (AXES_* settings); this module only words its
lockout. Every reader of a token (the REST API, the websocket) asks `token_expired`, so a token
past TOKEN_TTL fails everywhere alike.
"""

import math
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from web.negotiation import wants_json

TOKEN_EXPIRED = "Token has expired; request a new one at /api/auth/token/."


def token_checked(key: str) -> tuple[Token | None, str | None]:
    """The token of `key` with its user, and why it is refused (None: it is not): DRF's words
    for an unknown key and an inactive user, TOKEN_EXPIRED past TOKEN_TTL."""
    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None:
        return None, _("Invalid token.")
    if not token.user.is_active:
        return token, _("User inactive or deleted.")
    if token_expired(token):
        return token, TOKEN_EXPIRED
    return token, None


def token_live(key: str) -> Token | None:
    """The token of `key` with its user, if it is not refused (`token_checked`)."""
    token, refused = token_checked(key)
    return None if refused else token


def token_expired(token: Token) -> bool:
    """True when `token` has outlived TOKEN_TTL. An expired token is deleted on sight, so raising
    the TTL later cannot bring a stale credential back to life."""
    if timezone.now() < token.created + timedelta(seconds=settings.TOKEN_TTL):
        return False
    token.delete()
    return True


def token_issue(*, user: AbstractBaseUser) -> Token:
    """The user's live token, or a new one once the old has expired: signing in again is how a
    client renews. Concurrent sign-ins get the one token (get_or_create absorbs the race)."""
    cutoff = timezone.now() - timedelta(seconds=settings.TOKEN_TTL)
    Token.objects.filter(user=user, created__lte=cutoff).delete()
    token, _ = Token.objects.get_or_create(user=user)
    return token


def token_revoke(*, user: AbstractBaseUser) -> None:
    """Ends the user's API token at once (a leaked token, a retired script); the next sign-in
    issues a new one. The browser session is not touched."""
    Token.objects.filter(user=user).delete()


class ExpiringTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>`, refused (401) once the token is TOKEN_TTL old."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        token, refused = token_checked(key)
        if refused:
            raise exceptions.AuthenticationFailed(refused)
        return token.user, token


class SignupRateThrottle(SimpleRateThrottle):
    """Sign-ups per client address, for the API and the sign-up page alike (SIGNUP_RATE). Counts
    in the default cache, which all processes share; only POSTs count, not viewing the form."""

    scope = "signup"

    def get_rate(self) -> str | None:
        # Read when used, not at import as DRF's class attribute does, so settings stay live.
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def allow_request(self, request: Any, view: Any) -> bool:
        return request.method != "POST" or super().allow_request(request, view)


def _in(seconds: float) -> str:
    if seconds < 60:
        count, unit = math.ceil(seconds), "second"
    else:
        count, unit = math.ceil(seconds / 60), "minute"
    return f"in {count} {unit}{'' if count == 1 else 's'}"


def too_many(request: HttpRequest, *, what: str, wait: float) -> HttpResponse:
    """429 with `Retry-After`: JSON `{"detail"}` under /api/ and for a script, a page for
    people."""
    detail = f"{what} Try again {_in(wait)}."
    if request.path.startswith("/api/") or wants_json(request):
        response = JsonResponse({"detail": detail}, status=429)
    else:
        response = render(request, "registration/too_many.html", {"detail": detail}, status=429)
    response["Retry-After"] = str(math.ceil(wait))
    return response


def login_locked_out(request: HttpRequest, *args: Any) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE. Axes passes (response, credentials) in an order that differs
    between its sync and async middleware; neither is needed. Each further failure restarts the
    cool-off, so the wait is the whole cool-off."""
    return too_many(
        request,
        what="Too many failed sign-ins for this username from your address.",
        wait=settings.AXES_COOLOFF_TIME.total_seconds(),
    )
