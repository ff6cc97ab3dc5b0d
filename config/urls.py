from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("config.api_urls")),
    path("", include("web.pages.urls")),
]

# An outage outside every view (a middleware) is a 503 too, not a 500 that reads as our bug.
handler500 = "web.middleware.server_error"
