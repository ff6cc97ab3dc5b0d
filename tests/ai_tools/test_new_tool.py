"""A 16th tool is one file. A module written into the tools package, declaring its examples on
its class, is picked up by discovery, and from there by the registry, the system check, the
round-trip, bad-input and write-set tests and the property test, with no other file touched."""

import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ai_tools.tools
from ai_tools import registry
from ai_tools.checks import check_write_tools
from gm.claude import tool_specs
from tests.ai_tools.contract import record_apply_changes
from tests.ai_tools.examples import example_cases
from tests.ai_tools.test_tools import (
    assert_apply_keeps_its_write_set,
    assert_bad_inputs_refused,
    assert_round_trip,
)
from tests.audit.test_properties import play_and_rewind

MODULE = "ai_tools.tools.lantern"
LANTERN = textwrap.dedent(
    '''
    """A tool nobody else knows about: one file, nothing else edited."""

    from typing import Any

    from ai_tools import entities
    from ai_tools.base import Ref, Tier, ToolContext, WriteTool
    from ai_tools.registry import register
    from ai_tools.tools.schema import ID, NAME, obj


    @register
    class LightLantern(WriteTool):
        name = "light_lantern"
        tier = Tier.LOW
        description = "Light a lantern next to a creature: the location says where the light is."
        schema = obj({"creature_id": ID, "place": NAME}, ("creature_id", "place"))
        examples = ({"creature_id": Ref("goblin"), "place": "Lit cellar"},)

        def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
            ctx.creature(data["creature_id"])
            return [entities.key("campaign", ctx.campaign.pk, "scene")]

        def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
            ctx.campaign.location = data["place"]
            ctx.campaign.save(update_fields=["location"])
            return {"location": ctx.campaign.location}
    '''
)


@pytest.fixture
def lantern(tmp_path, monkeypatch):
    """The file, written into a directory the tools package spans for this test only; the
    registry is a copy, so the tool is gone again afterwards."""
    (tmp_path / "lantern.py").write_text(LANTERN)
    monkeypatch.setattr(ai_tools.tools, "__path__", [*ai_tools.tools.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_write_tools", dict(registry._write_tools))
    registry.discover()
    yield registry.write_tool("light_lantern")
    sys.modules.pop(MODULE, None)


def test_discovery_registers_the_new_tool_and_the_model_is_offered_it(lantern):
    assert type(lantern).__module__ == MODULE
    assert "light_lantern" in [tool.name for tool in registry.write_tools()]
    assert "light_lantern" in [spec["name"] for spec in tool_specs()]
    assert [case.values for case in example_cases() if case.values[0] == "light_lantern"] == [
        ("light_lantern", 0)
    ]


def test_the_system_check_passes_it_and_refuses_it_without_examples(lantern, monkeypatch):
    assert check_write_tools() == []
    monkeypatch.setattr(type(lantern), "examples", ())
    assert [error.msg for error in check_write_tools()] == [
        "Write tool 'light_lantern' has no examples."
    ]


def test_the_round_trip_bad_input_and_write_set_tests_run_it(lantern, world, monkeypatch):
    assert_round_trip(world, "light_lantern", 0)
    assert_bad_inputs_refused(world, "light_lantern")
    assert_apply_keeps_its_write_set(world, monkeypatch, "light_lantern", 0)


def test_the_property_test_plays_it(lantern, db, monkeypatch):
    played = set()

    @settings(
        max_examples=5,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(data=st.data())
    def replay(data):
        changes = record_apply_changes(monkeypatch)  # and holds it to its write set
        rows = play_and_rewind(data, ["light_lantern", "set_scene"], changes)
        played.update(row.tool_name for row in rows if row.status == "committed")

    replay()
    assert "light_lantern" in played


def test_without_the_file_the_registry_holds_the_spec_tools_only():
    assert MODULE not in sys.modules
    assert "light_lantern" not in [tool.name for tool in registry.write_tools()]
