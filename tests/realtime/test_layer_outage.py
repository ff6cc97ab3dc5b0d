"""The channel layer down (Redis unreachable) loses broadcasts, never writes: a REST write and a
GM turn commit and answer as usual, their events are logged as not sent, and a client catches up
by `seq` once the layer is back — its `hello` shows the gap and `/state/` fills it
(docs/operations.md, "Production notes"). Redis is also the cache of two rate limits, which
answer 503 while it is down."""

import logging
import re
import socket as sockets

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import User

from audit.models import ToolInvocation
from campaigns import realtime
from campaigns.models import Campaign, Creature, DiceRoll, Turn
from tests.api.conftest import campaign_url, client_for
from tests.conftest import signed_in
from tests.infra.conftest import assert_json_503, hit_goblin
from tests.realtime.test_resync import connect_bot, fetch_state, hp_of

FAILED = re.compile(r"broadcast of events (\d+)\.\.(\d+) \(\w+\) failed")


def unreachable_redis() -> dict:
    """A Redis channel layer on a local port nothing listens on: every send is refused."""
    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return {
        "default": {
            "BACKEND": "config.redis_layer.RedisPubSubLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{port}/0"]},
        }
    }


def lost_seqs(caplog: pytest.LogCaptureFixture) -> list[int]:
    """The event numbers the publisher logged as not sent, each failure with its traceback."""
    lost = []
    for record in caplog.records:
        found = FAILED.search(record.getMessage())
        assert found and record.exc_info, record.getMessage()
        lost += range(int(found[1]), int(found[2]) + 1)
    return lost


def event_seq(world) -> int:
    return Campaign.objects.get(pk=world.campaign.pk).event_seq


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_rest_write_commits_and_a_client_catches_up_by_seq(world, settings, caplog):
    client, greeting = await connect_bot(world)
    seen = greeting["seq"]
    await client.disconnect()  # the layer fails: every socket is closed (test_feeds.py)

    working, settings.CHANNEL_LAYERS = settings.CHANNEL_LAYERS, unreachable_redis()
    with caplog.at_level(logging.ERROR, logger=realtime.__name__):
        response = await database_sync_to_async(hit_goblin)(world)
        await database_sync_to_async(realtime.flush)()
    assert response.status_code == 201, response.json()
    row = await database_sync_to_async(ToolInvocation.objects.get)()
    assert row.status == "committed"
    now = await database_sync_to_async(event_seq)(world)
    assert lost_seqs(caplog) == list(range(seen + 1, now + 1)), "every event lost, none sent"
    page_of = f"/campaigns/{world.campaign.pk}/"
    page = await database_sync_to_async(lambda: signed_in(world.player).get(page_of))()
    assert page.status_code == 200, "pages do not use the layer"

    settings.CHANNEL_LAYERS = working  # the layer is back; the page reconnects
    again, hello = await connect_bot(world)
    assert hello["seq"] == now > seen, "hello shows the gap"
    state = await database_sync_to_async(fetch_state)(world)
    assert state["seq"] == hello["seq"] and hp_of(state, world.goblin) == 4
    await again.disconnect()


@pytest.mark.django_db(transaction=True)
def test_a_gm_turn_runs_to_its_end_and_only_its_events_are_lost(
    world, settings, caplog, run_gm_tasks
):
    settings.CHANNEL_LAYERS = unreachable_redis()
    seen = event_seq(world)
    with caplog.at_level(logging.ERROR, logger=realtime.__name__):
        response = client_for(world.player).post(
            campaign_url(world, "turns/"), {"message": "I attack the goblin."}, format="json"
        )
        assert response.status_code == 201, response.json()
        run_gm_tasks()
        realtime.flush()
    turn = Turn.objects.get(pk=response.json()["id"])
    assert turn.status == Turn.Status.COMPLETED
    assert ToolInvocation.objects.filter(turn=turn, status="committed").exists()
    assert Creature.objects.get(pk=world.goblin.pk).hp < 7
    assert lost_seqs(caplog) == list(range(seen + 1, event_seq(world) + 1))


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("rolls/", {"formula": "d20"}),
        ("/api/auth/register/", {"username": "newcomer", "password": "x7-long-enough-pw"}),
    ],
)
def test_the_rate_limits_in_a_redis_cache_answer_503_while_it_is_down(world, settings, path, body):
    """Redis is also the cache the dice and sign-up limits count in."""
    port = unreachable_redis()["default"]["CONFIG"]["hosts"][0]
    settings.CACHES = {"default": {"BACKEND": "core.redis_pool.RedisCache", "LOCATION": port}}
    url = path if path.startswith("/") else campaign_url(world, path)
    response = client_for(world.player).post(url, body, format="json")
    assert_json_503(response)
    assert not DiceRoll.objects.exists() and not User.objects.filter(username="newcomer").exists()
