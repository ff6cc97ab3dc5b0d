"""The embedded default's channel layer (config/channel_layer.py, on channels-lite): a socket
that hears nothing for longer than every timeout of the layer stays open and in its campaign's
group, and hears the next event. The timeouts are cut to a second so the silence takes seconds."""

import copy

import pytest
from channels.layers import get_channel_layer
from channels_lite.models import Event, GroupMembership
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from campaigns.realtime import group_name
from tests.realtime.conftest import browser, play_and_undo, receive_until

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the layer lives in SQLite"),
]

SQLITE_LAYER = "config.channel_layer.SQLiteChannelLayer"
EXPIRY = 1  # seconds: a message's life, and how long the layer's poller may sit idle
SILENCE = 3 * EXPIRY + 1  # seconds without a single event on the socket


@pytest.fixture
def short_timeouts(settings):
    """The SQLite layer as configured, with its message expiry and poller idle timeout cut to
    EXPIRY; the group expiry stays as configured (it outlives every socket Daphne keeps)."""
    layers = copy.deepcopy(django_settings.CHANNEL_LAYERS)
    if layers["default"]["BACKEND"] != SQLITE_LAYER:
        layers["default"] = {
            "BACKEND": SQLITE_LAYER,
            "CONFIG": {"database": "default", "group_expiry": django_settings.GROUP_EXPIRY},
        }
    layers["default"]["CONFIG"].update(expiry=EXPIRY, polling_idle_timeout=EXPIRY)
    settings.CHANNEL_LAYERS = layers


async def test_an_idle_socket_stays_in_its_group_past_the_layers_timeouts(world, short_timeouts):
    socket = await browser(world.campaign.pk, world.player)
    # Something delivered and long expired before the silence ends: what the trim deletes.
    await play_and_undo(world)
    await receive_until(socket, "interaction_reverted")

    assert await socket.receive_nothing(timeout=SILENCE, interval=0.5)  # open, and silent
    # The trim the layer runs now and then on an idle poll, run now: expired messages and
    # memberships go, a listening socket's membership stays.
    await get_channel_layer().clean_expired()
    assert not await Event.objects.aexists()

    membership = await GroupMembership.objects.aget(group_name=group_name(world.campaign.pk))
    turn = await play_and_undo(world)
    events = await receive_until(socket, "interaction_reverted")
    await socket.disconnect()

    assert {e["turn"] for e in events} == {turn.pk}
    assert membership.expires_at > timezone.now() + timezone.timedelta(
        seconds=django_settings.WEBSOCKET_TIMEOUT
    )
    assert not await GroupMembership.objects.filter(channel_name=membership.channel_name).aexists()
