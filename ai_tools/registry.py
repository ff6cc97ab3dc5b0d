"""The registry of tools. A module in `ai_tools/tools/` declaring a class with `@register` is all
it takes to add one: `discover` imports every module of that package at startup, the way the
admin imports every app's `admin.py`."""

import pkgutil
from importlib import import_module
from typing import Any, TypeVar

from ai_tools.base import ReadTool, WriteTool
from core.errors import InvalidInput

T = TypeVar("T", WriteTool, ReadTool)

_write_tools: dict[str, WriteTool] = {}
_read_tools: dict[str, ReadTool] = {}


def discover(package: str = "ai_tools.tools") -> None:
    """Import every module of the tools package; importing a module registers its tools."""
    for module in pkgutil.iter_modules(import_module(package).__path__):
        import_module(f"{package}.{module.name}")


def register(cls: type[T]) -> type[T]:
    table = _write_tools if issubclass(cls, WriteTool) else _read_tools
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    if cls.name in _write_tools or cls.name in _read_tools:
        raise ValueError(f"a tool named {cls.name!r} is already registered")
    table[cls.name] = cls()
    return cls


def write_tool(name: str) -> WriteTool:
    try:
        return _write_tools[name]
    except KeyError:
        raise InvalidInput(f"Unknown tool {name!r}.") from None


def summary(tool_name: Any, data: Any) -> str:
    """One line for a logged call, whatever its row holds: a tool since removed (or a name
    no tool ever had) is named only, and `WriteTool.summary` copes with any input."""
    tool = _write_tools.get(tool_name) if isinstance(tool_name, str) else None
    return tool.summary(data) if tool is not None else str(tool_name)


def read_tool(name: str) -> ReadTool | None:
    return _read_tools.get(name)


def write_tools() -> list[WriteTool]:
    return sorted(_write_tools.values(), key=lambda t: t.name)


def read_tools() -> list[ReadTool]:
    return sorted(_read_tools.values(), key=lambda t: t.name)
