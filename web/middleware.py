"""Outages outside the API's own error handler: pages, and any /api/ path DRF does not serve.

A view that hits an unavailable database or channel layer answers 503 with `Retry-After` — a
plain page for people, JSON `{"detail"}` under /api/ — instead of a 500 that reads as our bug.
An outage outside every view (a middleware saving the session) reaches Django's 500 handler,
which `server_error` makes the same 503. Other exceptions are left to Django.
"""

import logging
import sys

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.deprecation import MiddlewareMixin
from django.views import defaults

from core.faults import RETRY_AFTER_SECONDS, UNAVAILABLE_DETAIL, is_unavailable

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


class ServiceUnavailableMiddleware(MiddlewareMixin):
    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_unavailable(exception):
            return None
        logger.warning(
            "service unavailable on %s: %s: %s", request.path, type(exception).__name__, exception
        )
        return service_unavailable_response(request)


def service_unavailable_response(request: HttpRequest) -> HttpResponse:
    """Rendered without the request's context processors: they would query the database that
    is down (the signed-in user)."""
    if request.path.startswith(API_PREFIX):
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
