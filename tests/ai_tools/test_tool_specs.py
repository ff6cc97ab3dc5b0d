"""Every tool spec we send to the Messages API keeps the API's published rules for custom tools
(tests/gm/messages_api.py: name pattern, description, an object input_schema with no top-level
oneOf/allOf/anyOf, valid JSON Schema, unique names). One broken spec makes the API refuse every
GM turn, so this runs over the specs exactly as the Claude provider builds them."""

import pytest

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from gm.claude import tool_specs
from tests.gm.messages_api import Refused, check_tools, tool_problems

SPECS = tool_specs()


def test_the_specs_sent_are_every_registered_tool_once():
    names = [spec["name"] for spec in SPECS]
    registered = [tool.name for tool in [*registry.write_tools(), *registry.read_tools()]]
    assert sorted(names) == sorted(registered)
    check_tools(SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=[spec["name"] for spec in SPECS])
def test_each_spec_keeps_the_messages_api_rules(spec):
    assert tool_problems(spec, SPECS.index(spec)) == []


@pytest.mark.parametrize("combinator", ["oneOf", "allOf", "anyOf"])
def test_the_rules_refuse_a_top_level_combinator(combinator):
    spec = {**SPECS[0], "input_schema": {**SPECS[0]["input_schema"], combinator: [{}]}}
    assert tool_problems(spec, 3) == [
        "tools.3.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf "
        "at the top level"
    ]


@pytest.mark.parametrize(
    "change,problem",
    [
        ({"name": "modify creature"}, "tools.0.custom.name: String should match pattern"),
        ({"name": "x" * 65}, "tools.0.custom.name: String should match pattern"),
        ({"description": ""}, "tools.0.custom.description: a tool needs a description"),
        ({"input_schema": {"type": "array"}}, "tools.0.custom.input_schema.type"),
        ({"input_schema": {"type": "object", "required": ["x"]}}, "'x' is not a property"),
        ({"input_schema": {"type": "object", "minProperties": -1}}, "JSON schema is invalid"),
        ({"strict_mode": True}, "tools.0.strict_mode: Extra inputs are not permitted"),
    ],
)
def test_the_rules_refuse_what_the_api_refuses(change, problem):
    problems = tool_problems({**SPECS[0], **change}, 0)
    assert any(p.startswith(problem) or problem in p for p in problems), problems


def test_the_rules_refuse_duplicate_names():
    with pytest.raises(Refused, match="Tool names must be unique"):
        check_tools([SPECS[0], SPECS[0]])


def test_modify_creature_without_a_change_is_a_failed_row_and_changes_nothing(world):
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.owner,
        tool_name="modify_creature",
        input={"creature_id": world.goblin.pk},
    )
    assert row.status == ToolInvocation.Status.FAILED
    assert row.error == (
        "Invalid input: input: nothing to change; give at least one of hp_delta, set_hp, "
        "temp_hp, add_conditions, remove_conditions, death_save."
    )
    world.goblin.refresh_from_db()
    assert (world.goblin.hp, world.goblin.conditions) == (7, [])
