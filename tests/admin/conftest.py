"""Admin fixtures: a signed-in staff client and a quick way to put calls in the log."""

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from audit.models import ToolInvocation
from tests.conftest import World, call, signed_in

CHANGELIST = reverse("admin:audit_toolinvocation_changelist")


@pytest.fixture
def staff_client(staff) -> Client:
    """A staff member holding `audit.revert_toolinvocation` and nothing else."""
    return signed_in(staff)


@pytest.fixture
def hit(world: World) -> ToolInvocation:
    """The GM's hit on the goblin: HP and a condition, revertible."""
    return call(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -5, "add_conditions": ["prone"]},
        model="scripted",
    )


def move(world: World, x: int, y: int = 0, **extra: Any) -> ToolInvocation:
    return call(world, "move_token", {"creature_id": world.hero.pk, "x": x, "y": y}, **extra)


def change_url(row: Any) -> str:
    return reverse("admin:audit_toolinvocation_change", args=[row.pk])


def revert_url(row: Any) -> str:
    return reverse("admin:audit_toolinvocation_revert", args=[row.pk])


def listed(response) -> set:
    """The invocations on a changelist page."""
    return {row.pk for row in response.context["cl"].result_list}


def messages_of(response) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
