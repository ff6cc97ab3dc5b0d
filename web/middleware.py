"""Errors outside the API's own error handler: the pages, and any /api/ path DRF does not serve.

A script (the campaign page's, which sends `Accept: application/json`) is answered as the API
answers: every error is JSON `{"detail"}` with the API's status, made by the API's own handler
(`core.api.errors.exception_handler`) from the exception a view raised, so a page form refuses a
stranger with 404, a member without the right with 403, bad input with 400 or 422 and an outage
with 503, each exactly as its API twin does. An error response that is no exception (a 405, a
CSRF refusal, a URL that resolves nowhere) is turned into the same shape on its way out.

People get pages: an application error a view leaves to this middleware is a page saying why,
with its status; Django's own 404 and 403 stay Django's. A view that hits an unavailable
database or channel layer answers 503 with `Retry-After` (a plain page, or JSON under /api/ and
for scripts) instead of a 500 that reads as our bug; an outage outside every view (a middleware
saving the session) reaches Django's 500 handler, which `server_error` makes the same 503.
Other exceptions are left to Django.
"""

import logging
import sys
from http import HTTPStatus

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.deprecation import MiddlewareMixin
from django.views import defaults
from rest_framework.exceptions import APIException

from core.api.errors import exception_handler
from core.errors import AppError
from core.faults import RETRY_AFTER_SECONDS, UNAVAILABLE_DETAIL, is_unavailable
from web.negotiation import JSON, wants_json

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


class ServiceUnavailableMiddleware(MiddlewareMixin):
    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if is_unavailable(exception):
            logger.warning(
                "service unavailable on %s: %s: %s",
                request.path,
                type(exception).__name__,
                exception,
            )
            return service_unavailable_response(request)
        if wants_json(request):
            return _as_the_api_answers(exception)
        if isinstance(exception, AppError | APIException):
            return _error_page(request, exception)
        return None

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        """A script never reads an error page: whatever answered it (Django's 405, the CSRF
        check, a text/plain refusal), the error reaches it as `{"detail"}` with its status."""
        kind = response.get("Content-Type", "")
        if response.status_code < 400 or response.streaming or kind.startswith(JSON):
            return response
        if not wants_json(request):
            return response
        if kind.startswith("text/plain"):
            detail = response.content.decode(response.charset)
        else:
            detail = f"{HTTPStatus(response.status_code).phrase}."
        return _with_headers_of(
            response, JsonResponse({"detail": detail}, status=response.status_code)
        )


def _as_the_api_answers(exception: Exception) -> HttpResponse | None:
    """The API's answer to `exception` (None for what it does not know: a bug, Django's 500)."""
    answer = exception_handler(exception, {})
    if answer is None:
        return None
    return _with_headers_of(answer, JsonResponse(answer.data, status=answer.status_code))


def _with_headers_of(source: HttpResponse, response: HttpResponse) -> HttpResponse:
    """`response` carrying `source`'s headers but its own body's (Allow, Retry-After, ...)."""
    for header, value in source.items():
        if header.lower() not in ("content-type", "content-length"):
            response[header] = value
    response.cookies = source.cookies
    return response


def _error_page(request: HttpRequest, exception: AppError | APIException) -> HttpResponse:
    """The refusal as people read it: a page with the API's `detail` and status."""
    answer = exception_handler(exception, {})
    title = HTTPStatus(answer.status_code).phrase
    context = {"title": title, "detail": answer.data["detail"]}
    return render(request, "error.html", context, status=answer.status_code)


def service_unavailable_response(request: HttpRequest) -> HttpResponse:
    """Rendered without the request's context processors: they would query the database that
    is down (the signed-in user)."""
    if request.path.startswith(API_PREFIX) or wants_json(request):
        response: HttpResponse = JsonResponse({"detail": UNAVAILABLE_DETAIL}, status=503)
    else:
        page = render_to_string("503.html", {"detail": UNAVAILABLE_DETAIL})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """The project's 500 handler (config/urls.py): Django calls it while handling the uncaught
    exception, so an outage raised where no view's handler sees it still answers 503."""
    exception = sys.exc_info()[1]
    if exception is not None and is_unavailable(exception):
        logger.warning("service unavailable on %s: %s", request.path, type(exception).__name__)
        return service_unavailable_response(request)
    return defaults.server_error(request)
