"""Admin fixtures: a signed-in staff client and a quick way to put calls in the log."""

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from tests.conftest import World

CHANGELIST = reverse("admin:audit_toolinvocation_changelist")


@pytest.fixture
def staff_client(staff) -> Client:
    """A staff member holding `audit.revert_toolinvocation` and nothing else."""
    client = Client()
    client.force_login(staff)
    return client


def call(world: World, tool_name: str, data: dict[str, Any], **extra: Any) -> ToolInvocation:
    extra.setdefault("actor", world.owner)
    return invocation_dispatch(campaign=world.campaign, tool_name=tool_name, input=data, **extra)


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
