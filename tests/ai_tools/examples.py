"""The write tools' declared examples (`WriteTool.examples`), resolved against the shared test
world. The tests enumerate the registry through these, so a new tool is tested by declaring its
examples on its class; nothing here names a tool."""

from functools import partial
from typing import Any

import pytest

from ai_tools import registry
from ai_tools.base import Ref, WriteTool, resolve_refs
from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from tests.conftest import World


def world_pk(world: World, ref: Ref) -> Any:
    target = getattr(world, ref.name)
    return (target if ref.index is None else target[ref.index]).pk


def example_input(world: World, tool: WriteTool, index: int = 0) -> dict[str, Any]:
    """The tool's example `index` for this world, after its setup calls have committed."""
    for name in tool.example_setup:
        row = invocation_dispatch(
            campaign=world.campaign,
            actor=world.owner,
            tool_name=name,
            input=resolve_refs(registry.write_tool(name).examples[0], partial(world_pk, world)),
        )
        assert row.status == ToolInvocation.Status.COMMITTED, row.error
    return resolve_refs(tool.examples[index], partial(world_pk, world))


def example_cases() -> list[Any]:
    """One pytest case per registered write tool and declared example: `give_item-1`."""
    return [
        pytest.param(tool.name, index, id=f"{tool.name}-{index}")
        for tool in registry.write_tools()
        for index in range(len(tool.examples))
    ]
