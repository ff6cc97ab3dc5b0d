"""Fixtures for the people's pages: a signed-in test client per role."""

import pytest
from django.test import Client

from tests.conftest import World, signed_in


@pytest.fixture
def player_client(world: World) -> Client:
    return signed_in(world.player)


@pytest.fixture
def other_client(world: World) -> Client:
    return signed_in(world.other)
