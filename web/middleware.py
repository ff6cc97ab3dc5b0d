"""Outages outside the API's own error handler: pages, and any /api/ path DRF does not serve.

A view that hits an unavailable database or channel layer answers 503 with `Retry-After` — a
plain page for people, JSON `{"detail"}` under /api/ — instead of a 500 that reads as our bug.
Other exceptions are left to Django.
"""

import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.deprecation import MiddlewareMixin

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
