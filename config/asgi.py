"""The ASGI entry point: Django for HTTP, the campaign feed for websockets.

Websockets sit behind a same-origin check and `AuthMiddlewareStack` (session cookie), with
`Authorization: Token` header auth for non-browser clients (`web.ws_auth`).
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from web.routing import websocket_urlpatterns  # noqa: E402
from web.ws_auth import websocket_stack  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": websocket_stack(URLRouter(websocket_urlpatterns)),
    }
)
