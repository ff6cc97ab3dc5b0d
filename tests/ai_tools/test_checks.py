"""A write tool that could not be audited or undone refuses to start."""

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from ai_tools import registry
from ai_tools.base import Reach, Ref, Tier, WriteTool
from ai_tools.checks import check_write_tools
from ai_tools.tools.schema import ID, obj


class Incomplete(WriteTool):
    name = "incomplete_tool"
    description = "Declared without a tier, a valid schema, a revert or examples."
    schema = {"type": "no-such-type"}
    revert = None

    def apply(self, ctx, data):
        return {}


def test_registered_tools_pass_the_check():
    assert check_write_tools() == []


def test_tool_without_tier_schema_revert_or_examples_fails_the_check(monkeypatch):
    monkeypatch.setitem(registry._write_tools, Incomplete.name, Incomplete())
    messages = sorted(error.msg for error in check_write_tools())
    assert messages == [
        "Write tool 'incomplete_tool' has an invalid input schema "
        "('no-such-type' is not valid under any of the given schemas).",
        "Write tool 'incomplete_tool' has no examples.",
        "Write tool 'incomplete_tool' has no revert.",
        "Write tool 'incomplete_tool' has no tier.",
    ]
    with pytest.raises(SystemCheckError):
        call_command("check")


def test_an_example_the_schema_refuses_fails_the_check(monkeypatch):
    class Misdeclared(WriteTool):
        name = "misdeclared_tool"
        tier = Tier.LOW
        description = "Its example names a field the schema does not have."
        schema = obj({"creature_id": ID}, ("creature_id",))
        examples = ({"creature_id": Ref("hero")}, {"creature_id": Ref("hero"), "colour": "red"})

        def apply(self, ctx, data):
            return {}

    monkeypatch.setitem(registry._write_tools, Misdeclared.name, Misdeclared())
    assert [error.msg for error in check_write_tools()] == [
        "Write tool 'misdeclared_tool' has an example its schema refuses "
        "(input: Additional properties are not allowed ('colour' was unexpected))."
    ]


def test_a_tool_players_may_call_without_targets_fails_the_check(monkeypatch):
    """A player's call is checked against the creatures `targets` names (by default the one
    `creature_id` names): a tool that lets players call it but names none would let them act on
    anything."""

    class Untargeted(WriteTool):
        name = "untargeted_tool"
        tier = Tier.LOW
        reach = Reach.OWN_CHARACTER
        description = "Players may call it, but it never says on whom."
        schema = obj({"place": ID}, ("place",))
        examples = ({"place": 3},)

        def apply(self, ctx, data):
            return {}

    monkeypatch.setitem(registry._write_tools, Untargeted.name, Untargeted())
    assert [error.msg for error in check_write_tools()] == [
        "Write tool 'untargeted_tool' lets players call it on their own character but names "
        "no targets."
    ]


def test_registering_a_second_tool_with_the_same_name_is_refused():
    class Duplicate(WriteTool):
        name = "move_token"
        tier = Tier.LOW

    with pytest.raises(ValueError, match="already registered"):
        registry.register(Duplicate)
