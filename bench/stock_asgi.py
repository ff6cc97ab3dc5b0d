"""The app as `config.asgi` serves it, but with Django's own ASGI handler for HTTP (the
middleware chain built async, as Django builds it under ASGI): the other side of
bench/asgi_handler.py. Served with `bench/` on PYTHONPATH: `daphne stock_asgi:application`."""

from channels.routing import ProtocolTypeRouter
from django.core.handlers.asgi import ASGIHandler

from config.asgi import application as ours

application = ProtocolTypeRouter(
    {"http": ASGIHandler(), "websocket": ours.application_mapping["websocket"]}
)
