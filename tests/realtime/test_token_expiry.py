"""A websocket client authenticating by token is held to TOKEN_TTL like the REST API."""

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone
from rest_framework.authtoken.models import Token

from tests.realtime.conftest import open_socket, token_header
from web.consumers import REFUSED

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@database_sync_to_async
def age_tokens(seconds: float) -> None:
    Token.objects.update(created=timezone.now() - timedelta(seconds=seconds))


@database_sync_to_async
def tokens_left() -> int:
    return Token.objects.count()


async def test_an_expired_token_opens_no_websocket_and_is_deleted(world, settings):
    header = await token_header(world.owner)
    await age_tokens(settings.TOKEN_TTL - 60)
    socket, connected, _ = await open_socket(world.campaign.pk, [header])
    assert connected
    await socket.disconnect()
    await age_tokens(settings.TOKEN_TTL + 1)
    _, connected, code = await open_socket(world.campaign.pk, [header])
    assert (connected, code) == (False, REFUSED)
    assert await tokens_left() == 0
