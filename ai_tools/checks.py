"""A write tool that could not be audited or undone must not start."""

from typing import Any

from django.core.checks import Error, register
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ai_tools.base import Tier, WriteTool
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
    return problems


@register()
def check_write_tools(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    return [
        Error(f"Write tool {tool.name!r} {problem}.", obj=type(tool), id="ai_tools.E001")
        for tool in write_tools()
        for problem in tool_errors(tool)
    ]
