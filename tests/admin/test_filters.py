"""Distinct values by skip scan: what the log holds, in order, in one query."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import ToolInvocation
from tests.admin.conftest import call, move
from web.admin.filters import distinct_values


def test_distinct_values_lists_each_value_once_in_order_blank_included(world):
    for model in ("zeta", "", "alpha", "zeta", "alpha"):
        move(world, 1, model=model)
    call(world, "set_scene", {"description": "Ash."}, model="mid")
    with CaptureQueriesContext(connection) as queries:
        assert distinct_values(ToolInvocation, "model") == ["", "alpha", "mid", "zeta"]
        assert distinct_values(ToolInvocation, "tool_name") == ["move_token", "set_scene"]
    assert len(queries) == 2


def test_distinct_values_of_an_empty_table(db):
    assert distinct_values(ToolInvocation, "source") == []
