"""The MCP endpoint's rate limit (MCP_RATE, per user, in the cache every process shares) and
the agent turn's idle timeout (MCP_TURN_IDLE)."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from audit.models import InvocationOrigin
from audit.services.agent import agent_call, agent_turn_begin, agent_turn_current
from campaigns.models import Turn
from tests.mcp.client import mcp_url
from tests.mcp.test_endpoint import raw
from tests.processes import daphne_server
from tests.servers import api_token


@pytest.mark.django_db(transaction=True)
def test_past_the_rate_a_user_gets_429_with_retry_after_and_others_do_not(settings, live_world):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**rates, "mcp": "3/minute"},
    }
    cache.clear()
    with daphne_server() as base:  # forked after the change: the server has the rate
        url = mcp_url(base, live_world.campaign.pk)
        player, owner = api_token(base, "player"), api_token(base, "owner")
        assert [raw(url, token=player)[0] for _ in range(3)] == [200, 200, 200]
        status, headers, body = raw(url, token=player)
        assert status == 429 and int(headers["Retry-After"]) >= 1
        assert body["error"]["message"].startswith("Too many requests")
        assert raw(url, token=owner)[0] == 200  # per user


@pytest.mark.django_db
def test_a_call_joins_the_live_agent_turn_and_an_idle_one_is_left(world, settings):
    settings.MCP_TURN_IDLE = 60
    begun = agent_turn_begin(campaign_id=world.campaign.pk, by=world.player, message="Go.")
    assert agent_turn_current(campaign=world.campaign, by=world.player) == begun
    # Another person's open turn is never joined: the owner gets one of their own.
    theirs = agent_turn_current(campaign=world.campaign, by=world.owner, client="mcp:x 1")
    assert theirs != begun and theirs.actor == world.owner
    assert theirs.messages.get().content == "mcp:x 1 acts."

    row = agent_call(
        campaign_id=world.campaign.pk,
        turn_id=None,
        by=world.player,
        tool_name="move_token",
        input={"creature_id": world.hero.pk, "x": 2, "y": 3},
        source=InvocationOrigin.MCP,
    )
    assert row.turn == begun
    # Idle: the turn's opening and its last call both older than MCP_TURN_IDLE.
    old = timezone.now() - timedelta(seconds=61)
    Turn.objects.filter(pk=begun.pk).update(created_at=old)
    assert agent_turn_current(campaign=world.campaign, by=world.player) == begun  # the call
    row.__class__.objects.filter(pk=row.pk).update(created_at=old)
    fresh = agent_turn_current(campaign=world.campaign, by=world.player)
    assert fresh != begun and fresh.status == Turn.Status.OPEN
