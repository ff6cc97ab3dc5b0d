"""The REST API (docs/api.md): the campaign and audit routes, the OpenAPI schema and Swagger UI.

Anything else under /api/ is a JSON 404, so API clients never receive an HTML error page.
"""

from django.urls import include, path, re_path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.decorators import api_view, permission_classes, renderer_classes
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from core.errors import NotFound


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
@permission_classes([AllowAny])
@renderer_classes([JSONRenderer])
def not_found(request: Request, path: str = ""):
    raise NotFound()


urlpatterns = [
    path("", include("web.api.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    re_path(r"^(?P<path>[\s\S]*)$", not_found),
]
