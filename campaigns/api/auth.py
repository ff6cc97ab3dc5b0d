"""Sign-up and API tokens. Browsers use the session (with CSRF); scripts and agents send
`Authorization: Token <token>`."""

from typing import Any

from django.contrib.auth import authenticate, get_user_model, password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns.api.base import ApiView, StrictSerializer
from campaigns.api.errors import error_responses

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


@extend_schema(tags=["auth"])
class TokenView(ApiView):
    """The caller's API token (created on first use); send it as `Authorization: Token <t>`."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Exchange a username and password for an API token",
        request=CredentialsInput,
        responses={200: TokenSerializer, **error_responses(public=True)},
    )
    def post(self, request: Request) -> Response:
        data = CredentialsInput(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(request=request._request, **data.validated_data)
        if user is None:
            raise serializers.ValidationError("Unable to log in with the provided credentials.")
        token, _ = Token.objects.get_or_create(user=user)
        return Response(TokenSerializer({"token": token.key}).data)


@extend_schema(tags=["auth"])
class RegisterView(ApiView):
    """Sign up with a username and a password that passes the password validators."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Create an account",
        request=RegisterInput,
        responses={201: UserSerializer, **error_responses(public=True)},
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
