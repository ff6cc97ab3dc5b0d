"""PostgreSQL kills the backend in the middle of a tool call (a failover, an operator's
pg_terminate_backend): the client gets a JSON 503 it may retry, the log blames no tool, and the
next request works on a fresh connection."""

import pytest
from django.db import connection

from ai_tools import registry
from audit.models import ToolInvocation
from campaigns.models import Creature
from tests.conftest import build_world, postgres_only
from tests.infra.conftest import assert_json_503, hit_goblin

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]


def test_a_backend_killed_inside_a_tool_call_is_a_503_and_no_failed_row(monkeypatch):
    world = build_world()
    tool = registry.write_tool("modify_creature")
    apply = tool.apply
    killed: list[int] = []

    def apply_then_lose_the_backend(ctx, data):
        result = apply(ctx, data)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            killed.append(cursor.fetchone()[0])
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return result

    monkeypatch.setattr(tool, "apply", apply_then_lose_the_backend)
    response = hit_goblin(world)
    monkeypatch.undo()

    assert killed, "the backend must have been killed mid-call"
    assert_json_503(response)
    assert not ToolInvocation.objects.exists()
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7

    retried = hit_goblin(world)
    assert retried.status_code == 201, retried.content
    assert Creature.objects.get(pk=world.goblin.pk).hp == 4
