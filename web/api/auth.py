"""Sign-up and API tokens. Browsers use the session (with CSRF); scripts and agents send
`Authorization: Token <token>`. Failed sign-ins here are counted by django-axes like those of
the sign-in page and the admin; a locked-out caller gets 429 (web.accounts)."""

from typing import Any

from django.contrib.auth import authenticate, get_user_model, password_validation
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.base import ApiView, StrictSerializer
from core.api.errors import ErrorSerializer, error_responses
from web.accounts import SignupRateThrottle, token_issue, token_revoke

User = get_user_model()


class CredentialsInput(StrictSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=128, trim_whitespace=False)


class RegisterInput(CredentialsInput):
    username = serializers.RegexField(
        r"^[\w.@+-]+\Z",
        max_length=150,
        error_messages={"invalid": "Letters, digits and @/./+/-/_ only."},
    )

    def validate_username(self, value: str) -> str:
        if User.objects.filter(username=value).exists():
            raise serializers.ValidationError("That username is taken.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            password_validation.validate_password(
                attrs["password"], User(username=attrs["username"])
            )
        except DjangoValidationError as exc:
            raise serializers.ValidationError({"password": list(exc.messages)}) from exc
        return attrs


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class UserSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    description="Seconds until the caller may try again.",
    response=[429],
)


@extend_schema(tags=["auth"])
class TokenView(ApiView):
    """The caller's API token: issued for a username and password (the same token until it
    expires after TOKEN_TTL, then a new one), revoked by its user. Send it as
    `Authorization: Token <t>`. Repeated failures for one username from one address are locked
    out for a while (429)."""

    def get_permissions(self) -> list[BasePermission]:
        return [AllowAny()] if self.request.method == "POST" else super().get_permissions()

    def perform_authentication(self, request: Request) -> None:
        """Signing in needs no credentials but the posted ones: a client still sending its
        expired token must be able to get a new one."""
        if request.method != "POST":
            super().perform_authentication(request)

    @extend_schema(
        summary="Exchange a username and password for an API token",
        request=CredentialsInput,
        auth=[],
        parameters=[RETRY_AFTER],
        responses={200: TokenSerializer, 429: ErrorSerializer, **error_responses(public=True)},
    )
    def post(self, request: Request) -> Response:
        data = CredentialsInput(data=request.data)
        data.is_valid(raise_exception=True)
        # The Django request: axes records the failure on it and its middleware answers 429.
        user = authenticate(request=request._request, **data.validated_data)
        if user is None:
            raise serializers.ValidationError("Unable to log in with the provided credentials.")
        # A sign-in like the page's: axes clears this caller's failures, last_login is set.
        user_logged_in.send(sender=type(user), request=request._request, user=user)
        return Response(TokenSerializer({"token": token_issue(user=user).key}).data)

    @extend_schema(
        summary="Revoke the caller's API token",
        request=None,
        responses={204: None, 401: ErrorSerializer},
    )
    def delete(self, request: Request) -> Response:
        token_revoke(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["auth"])
class RegisterView(ApiView):
    """Sign up with a username and a password that passes the password validators. Sign-ups are
    rate-limited per client address (SIGNUP_RATE, shared with the sign-up page): 429."""

    permission_classes = [AllowAny]
    throttle_classes = [SignupRateThrottle]

    def throttled(self, request: Request, wait: float | None) -> None:
        raise exceptions.Throttled(wait, detail="Too many sign-ups from your address.")

    @extend_schema(
        summary="Create an account",
        request=RegisterInput,
        parameters=[RETRY_AFTER],
        responses={201: UserSerializer, 429: ErrorSerializer, **error_responses(public=True)},
    )
    def post(self, request: Request) -> Response:
        data = RegisterInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            with transaction.atomic():
                user = User.objects.create_user(**data.validated_data)
        except IntegrityError as exc:  # a concurrent sign-up took the name first
            raise serializers.ValidationError({"username": ["That username is taken."]}) from exc
        return Response(UserSerializer(user).data, status=status.HTTP_201_CREATED)
