"""Handshakes that cannot succeed end in a clean refusal with an application close code, never
in an application error (which Daphne answers with HTTP 500 and a traceback)."""

import logging
import socket as sockets
from urllib.parse import quote

import pytest
import pytest_asyncio
from channels.testing import WebsocketCommunicator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.asgi import application
from tests.realtime.conftest import HOST, ORIGIN, open_socket, session_cookie
from web.consumers import NOT_FOUND, REFUSED, UNAVAILABLE

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest_asyncio.fixture
async def member_cookie(world):
    return await session_cookie(world.player)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(segment=st.text(max_size=40))
async def test_any_campaign_segment_but_a_campaign_id_is_refused_cleanly(
    world, member_cookie, segment
):
    """The segment arrives percent-encoded, as a client sends it; the server decodes it."""
    _, connected, code = await open_socket(quote(segment, safe=""), [ORIGIN, member_cookie])
    assert not connected
    assert 4000 <= code < 5000


@pytest.mark.parametrize(
    "path", ["/ws/campaigns/not-a-uuid/", "/ws/elsewhere/", "/ws/campaigns/", "/"]
)
async def test_a_path_that_is_no_feed_is_refused_as_not_found(world, member_cookie, path):
    socket = WebsocketCommunicator(application, path, headers=[HOST, ORIGIN, member_cookie])
    assert await socket.connect() == (False, NOT_FOUND)


def closed_port() -> int:
    """A local port nothing listens on."""
    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def redis_down(settings):
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "config.redis_layer.RedisPubSubLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{closed_port()}/0"]},
        }
    }


async def test_a_handshake_while_redis_is_down_is_closed_cleanly_and_logged(
    world, member_cookie, redis_down, caplog
):
    with caplog.at_level(logging.ERROR, logger="web.consumers"):
        socket, connected, code = await open_socket(world.campaign.pk, [ORIGIN, member_cookie])
        assert (connected, code) == (False, UNAVAILABLE)
        assert await socket.receive_nothing()
    [record] = [r for r in caplog.records if r.name == "web.consumers"]
    assert "channel layer unavailable" in record.getMessage()
    assert record.exc_info is not None


async def test_a_refusal_while_redis_is_down_is_one_clean_close(world, redis_down):
    """Whichever comes first, the refusal or the layer's failure, the socket is closed once."""
    cookie = await session_cookie(world.outsider)
    socket, connected, code = await open_socket(world.campaign.pk, [ORIGIN, cookie])
    assert not connected
    assert code in (REFUSED, UNAVAILABLE)
    assert await socket.receive_nothing()
