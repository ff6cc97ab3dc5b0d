"""The embedded default's channel layer (config/channel_layer.py, on channels-lite): a socket
that hears nothing for longer than every timeout of the layer stays open and in its campaign's
group, and hears the next event (the timeouts are cut to a second so the silence takes seconds);
publishes from sync code, each on an event loop of its own, leave no connection open; expiry
times are UTC whatever the machine's time zone."""

import copy
import json
import threading
import time
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels_lite.models import Event, GroupMembership
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from campaigns import realtime
from campaigns.realtime import group_name
from config.channel_layer import SQLiteChannelLayer
from tests.realtime.conftest import TIMEOUT, browser, play_and_undo, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the layer lives in SQLite"),
]

SQLITE_LAYER = "config.channel_layer.SQLiteChannelLayer"
EXPIRY = 1  # seconds: a message's life, and how long the layer's poller may sit idle
SILENCE = 3 * EXPIRY + 1  # seconds without a single event on the socket


def sqlite_layers(**config) -> dict:
    """CHANNEL_LAYERS with the SQLite layer as configured (or as the embedded default configures
    it, under CHANNEL_LAYER=memory), `config` on top."""
    layers = copy.deepcopy(django_settings.CHANNEL_LAYERS)
    if layers["default"]["BACKEND"] != SQLITE_LAYER:
        layers["default"] = {
            "BACKEND": SQLITE_LAYER,
            "CONFIG": {"database": "default", "group_expiry": django_settings.GROUP_EXPIRY},
        }
    layers["default"]["CONFIG"].update(config)
    return layers


@pytest.fixture
def short_timeouts(settings):
    """The SQLite layer as configured, with its message expiry and poller idle timeout cut to
    EXPIRY; the group expiry stays as configured (it outlives every socket Daphne keeps)."""
    settings.CHANNEL_LAYERS = sqlite_layers(expiry=EXPIRY, polling_idle_timeout=EXPIRY)


@pytest.fixture
def layer(settings) -> SQLiteChannelLayer:
    settings.CHANNEL_LAYERS = sqlite_layers()
    return get_channel_layer()


def connection_threads() -> list[threading.Thread]:
    """The layer's open database connections: aiosqlite runs each on a thread of its own."""
    return [t for t in threading.enumerate() if "_connection_worker_thread" in t.name]


@pytest.mark.asyncio
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


def test_a_loop_that_closes_takes_its_connections_with_it(world, layer):
    """`async_to_sync` from plain sync code (a management command, a script) runs each call on
    an event loop of its own, which closes after it: the connections the layer opened on that
    loop must close with it, or such a caller would pile up a thread and a connection per call."""
    group = group_name(world.campaign.pk)
    listener = "specific.elsewhere!socket"  # a web process's feed, as its row says
    async_to_sync(layer.group_add)(group, listener)
    before = set(connection_threads())

    for seq in range(1, 6):
        message = {"type": "campaign.events", "texts": [json.dumps({"type": "x", "seq": seq})]}
        async_to_sync(layer.group_send)(group, message)

    assert Event.objects.filter(channel_name="specific.elsewhere!").count() == 5  # all sent
    opened = [t for t in connection_threads() if t not in before]
    for thread in opened:  # a closed connection's thread is ending; an open one never ends
        thread.join(timeout=TIMEOUT)
    assert not [t for t in opened if t.is_alive()]


def test_a_workers_publishes_share_the_publishers_connections(world, layer):
    """A task worker publishes from plain sync code through the publisher's one event loop
    (`campaigns.realtime`): its connections are opened once and reused, so a hundred events
    cost no more connections than five."""
    group = group_name(world.campaign.pk)
    async_to_sync(layer.group_add)(group, "specific.elsewhere!socket")
    for seq in range(1, 6):
        realtime._send(group, [{"type": "scene_changed", "seq": seq}])
    realtime.flush()
    after_five = {t for t in connection_threads() if t.is_alive()}

    for seq in range(6, 101):
        realtime._send(group, [{"type": "scene_changed", "seq": seq}])
    realtime.flush()

    assert Event.objects.filter(channel_name="specific.elsewhere!").count() == 100
    assert {t for t in connection_threads() if t.is_alive()} <= after_five
    assert len(after_five) <= layer.pool_size + 1  # the publisher's pool (and the test's own)


def test_expiry_times_are_utc_whatever_the_machines_time_zone(world, layer, monkeypatch):
    """channels-lite writes naive local times; Django and this layer's trims read UTC. A
    membership written five hours off would expire five hours early (or late)."""
    group, channel = group_name(world.campaign.pk), "specific.elsewhere!socket"
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        async_to_sync(layer.group_add)(group, channel)
    finally:
        monkeypatch.undo()
        time.tzset()

    membership = GroupMembership.objects.get(group_name=group, channel_name=channel)
    expected = timezone.now() + timedelta(seconds=layer.group_expiry)
    assert abs(membership.expires_at - expected) < timedelta(minutes=1)
