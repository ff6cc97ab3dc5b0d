"""`idempotentHint` as each tool really is: a tool that declares itself idempotent changes the
world no further when its call is made again with the same input, for every declared example
(docs/mcp.md#annotations)."""

import pytest

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from tests.ai_tools.examples import example_input
from tests.conftest import dump

IDEMPOTENT = [
    pytest.param(tool.name, index, id=f"{tool.name}-{index}")
    for tool in registry.write_tools()
    if tool.idempotent
    for index in range(len(tool.examples))
]


def test_the_idempotent_tools_are_those_that_set_a_value():
    assert {t.name for t in registry.write_tools() if t.idempotent} == {
        "activate_dungeon",
        "end_combat",
        "move_token",
        "rest",
        "reveal_fog",
        "set_scene",
    }


@pytest.mark.django_db
@pytest.mark.parametrize(("tool_name", "index"), IDEMPOTENT)
def test_a_second_identical_call_changes_nothing_more(world, tool_name, index):
    data = example_input(world, registry.write_tool(tool_name), index)

    def once() -> tuple[str, str]:
        row = invocation_dispatch(
            campaign=world.campaign, actor=world.owner, tool_name=tool_name, input=data
        )
        return row.status, dump(world.campaign)

    status, first = once()
    assert status == ToolInvocation.Status.COMMITTED
    assert once()[1] == first
