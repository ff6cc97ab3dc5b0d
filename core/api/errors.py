"""The one place where errors become HTTP: every error body is JSON with a `detail`.

Services raise `core.errors` types; DRF raises its own for authentication, parsing and
validation. Both end here, so API clients see one error shape whatever went wrong. An outage of
the database or the channel layer (`core.faults`) is a 503 with `Retry-After`, like the
audit log failing closed: the client may retry, nothing was half-done.
"""

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import AppError, CallRefused, Conflict, Diverged, StalePreview
from core.faults import RETRY_AFTER_SECONDS, UNAVAILABLE_DETAIL, is_unavailable

logger = logging.getLogger(__name__)


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


class ServiceUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = UNAVAILABLE_DETAIL
    default_code = "service_unavailable"
    wait = RETRY_AFTER_SECONDS  # DRF's handler turns it into Retry-After


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, AppError):
        return Response(_app_error_body(exc), status=exc.status_code, headers=_retry_after(exc))
    if is_unavailable(exc):
        logger.warning("service unavailable: %s: %s", type(exc).__name__, exc)
        exc = ServiceUnavailable()
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if isinstance(exc, exceptions.ValidationError):
        body = {"detail": _first_message(exc.detail), "errors": exc.detail}
        return Response(body, status=exc.status_code)
    return drf_exception_handler(exc, context)


def _retry_after(exc: AppError) -> dict[str, str]:
    """Every 503 tells the client when to come back (RFC 9110 §10.2.3)."""
    if exc.status_code == status.HTTP_503_SERVICE_UNAVAILABLE:
        return {"Retry-After": str(RETRY_AFTER_SECONDS)}
    return {}


def _app_error_body(exc: AppError) -> dict[str, Any]:
    """Only public extras leave the server: a Forbidden carries the campaign for the security
    log, which is not the client's business."""
    body: dict[str, Any] = {"detail": exc.detail}
    if isinstance(exc, Conflict):
        body["conflicts"] = [str(c) for c in exc.conflicts]
    if isinstance(exc, StalePreview):
        body["preview"] = exc.preview
    if isinstance(exc, Diverged):
        body["changes"] = exc.changes
    if isinstance(exc, CallRefused):
        body["invocation"] = str(exc.invocation)
    return body


def _first_message(detail: Any, path: str = "") -> str:
    """One readable sentence for `detail`, naming the field: `name: This field is required.`"""
    if isinstance(detail, dict):
        for key, value in detail.items():
            prefix = path if key == "non_field_errors" else f"{path}.{key}".lstrip(".")
            return _first_message(value, prefix)
    if isinstance(detail, list):
        for value in detail:
            message = _first_message(value, path)
            if message:
                return message
        return "Invalid input."
    return f"{path}: {detail}" if path else str(detail)


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()


class ValidationErrorSerializer(ErrorSerializer):
    errors = serializers.JSONField(
        required=False, help_text="The refused fields, each with its messages."
    )


class RefusedSerializer(ErrorSerializer):
    invocation = serializers.UUIDField(
        required=False, help_text="A refused tool call's failed log row (least privilege)."
    )


class ConflictSerializer(ErrorSerializer):
    conflicts = serializers.ListField(
        child=serializers.UUIDField(), help_text="The later invocations in the way."
    )


_ERRORS = {
    400: ValidationErrorSerializer,
    401: ErrorSerializer,
    403: ErrorSerializer,
    404: ErrorSerializer,
    409: ConflictSerializer,
    413: ErrorSerializer,
    422: ErrorSerializer,
    503: ErrorSerializer,
}


def error_responses(*codes: int, public: bool = False) -> dict[int, type[serializers.Serializer]]:
    """The documented error bodies of an endpoint, for `extend_schema(responses=...)`. Every
    endpoint can answer 400 (bad request) and 413; those behind sign-in also 401 and 404."""
    always = {400, 413} if public else {400, 401, 404, 413}
    return {code: _ERRORS[code] for code in sorted(always | set(codes))}
