"""A write tool that could not be audited, undone or tested must not start."""

from typing import Any

from django.core.checks import Error, register
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ai_tools.base import Reach, Ref, Tier, WriteTool, resolve_refs
from ai_tools.registry import write_tools


def tool_errors(tool: WriteTool) -> list[str]:
    problems = []
    if not isinstance(tool.tier, Tier):
        problems.append("has no tier")
    if not tool.description:
        problems.append("has no description")
    if not isinstance(tool.schema, dict):
        problems.append("has no input schema")
    else:
        try:
            Draft202012Validator.check_schema(tool.schema)
        except SchemaError as exc:
            problems.append(f"has an invalid input schema ({exc.message})")
    if not callable(getattr(tool, "revert", None)):
        problems.append("has no revert")
    if type(tool).apply is WriteTool.apply:
        problems.append("has no apply")
    if not isinstance(tool.reach, Reach):
        problems.append("has no reach")
    elif tool.reach is Reach.OWN_CHARACTER and not _names_targets(tool):
        problems.append("lets players call it on their own character but names no targets")
    return problems + _example_errors(tool)


def _names_targets(tool: WriteTool) -> bool:
    """Whether a player's call is checked against creatures: the tool says which (`targets`), or
    its input must name one (`creature_id`, which the default `targets` reads)."""
    if type(tool).targets is not WriteTool.targets:
        return True
    return "creature_id" in (tool.schema or {}).get("required", ())


def _example_errors(tool: WriteTool) -> list[str]:
    """Examples are what the tests run the tool with, so a tool without one is untested. Each
    must fit the schema (with a distinct made-up id for each `Ref`: no world is at hand here)."""
    if not tool.examples:
        return ["has no examples"]
    if not isinstance(tool.schema, dict):
        return []
    ids: dict[Ref, int] = {}
    return [
        f"has an example its schema refuses ({problem})"
        for example in tool.examples
        if (
            problem := tool.validate(
                resolve_refs(example, lambda r: ids.setdefault(r, len(ids) + 1))
            )
        )
    ]


@register()
def check_write_tools(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    return [
        Error(f"Write tool {tool.name!r} {problem}.", obj=type(tool), id="ai_tools.E001")
        for tool in write_tools()
        for problem in tool_errors(tool)
    ]
