"""The GM runner's side of least privilege (docs/tools.md#who-may-call-what): the model at the
GM's seat is the GM, so its calls have the GM's powers on whoever's turn it answers. What guards
them is the approval policy and the affected player's say, not the powers of that player (their
own agent's calls are refused the same calls: tests/ai_tools/test_least_privilege.py)."""

import pytest

from ai_tools import registry
from audit.models import ToolInvocation
from tests.ai_tools.examples import example_cases, example_input
from tests.gm.conftest import Provider


@pytest.mark.parametrize("tool_name,index", example_cases())
def test_the_gm_runner_has_the_gms_powers_on_a_players_turn(world, play, tool_name, index):
    data = example_input(world, registry.write_tool(tool_name), index)
    outcomes = []

    def behaviour(session):
        outcomes.append(session.call_tool(tool_name, data, model="test/gm-1", tool_use_id="u1"))

    play("I act.", actor=world.player, provider=Provider(behaviour))
    [outcome] = outcomes
    assert outcome.ok, outcome.content
    row = ToolInvocation.objects.get(tool_use_id="u1")
    assert (row.status, row.user, row.source) == ("committed", world.player, "gm")
