"""The audited dispatch's SQL is fixed per tool and does not grow with the log: the counts are
pinned here for PostgreSQL (where the log row, its write/read-set entries, the campaign's log
head and event number and the undone-turn check are one statement) and for the embedded SQLite
(one statement each, the turn checked before the tool runs).

What one `modify_creature` runs on PostgreSQL, in order (7; the same write done bare runs 5):
BEGIN (here a savepoint: the test's transaction is outside), the campaign row lock (which also
reads the log head and the event number), the creature (the tool's own read, which also serves
the snapshot), the tool's UPDATE (which returns the row: the post-state), what players may see
of its event (`campaigns.visibility.player_envelopes`: one read of the creature's kind and the
fog over its cell, made for an event that names a creature not known to be a PC), the one
statement that writes the log, COMMIT (here: release)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from tests.ai_tools.examples import example_input
from tests.conftest import World, rolled_back

pytestmark = pytest.mark.django_db

# Statements of one dispatch of each tool's first example, BEGIN and COMMIT included.
# A tool's own reads and writes vary (end_adventure unlocks an achievement per member, with a
# savepoint each; rest restores every resource); what the log adds is fixed: on PostgreSQL the
# lock and the one log statement, on SQLite the lock, the turn check and three log statements.
# A tool whose events name a creature by a facet (modify_creature, move_token, rest: kind
# unknown) or a non-PC whole (spawn_creature) adds the one read of what players may see.
STATEMENTS = {
    "postgresql": {
        "activate_dungeon": 6,
        "advance_chapter": 6,
        "advance_turn": 6,
        "consume_resource": 9,
        "end_adventure": 48,
        "end_combat": 7,
        "give_item": 8,
        "modify_creature": 7,
        "move_token": 7,
        "rest": 21,
        "reveal_fog": 9,
        "set_scene": 5,
        "spawn_creature": 7,
        "start_combat": 10,
        "write_memory": 7,
    },
    "sqlite": {
        "activate_dungeon": 9,
        "advance_chapter": 9,
        "advance_turn": 9,
        "consume_resource": 12,
        "end_adventure": 51,
        "end_combat": 10,
        "give_item": 11,
        "modify_creature": 10,
        "move_token": 10,
        "rest": 24,
        "reveal_fog": 12,
        "set_scene": 8,
        "spawn_creature": 10,
        "start_combat": 13,
        "write_memory": 10,
    },
}


def fill_log(world: World, rows: int) -> None:
    for i in range(rows):
        invocation_dispatch(
            campaign=world.campaign,
            actor=world.owner,
            tool_name="set_scene",
            input={"description": f"Scene {i}"},
        )


def statements_per_tool(world: World) -> dict[str, int]:
    counts = {}
    for tool in registry.write_tools():
        with rolled_back():  # each tool from the same world
            data = example_input(world, tool)
            turn = world.turn(actor=world.owner)
            with CaptureQueriesContext(connection) as queries:
                row = invocation_dispatch(
                    campaign=world.campaign,
                    actor=world.owner,
                    tool_name=tool.name,
                    input=data,
                    turn=turn,
                )
            assert row.status == ToolInvocation.Status.COMMITTED, (tool.name, row.error)
            counts[tool.name] = len(queries)
    return counts


@pytest.mark.parametrize("prior_rows", [1, 200])
def test_each_tools_dispatch_runs_a_pinned_number_of_statements(world, prior_rows):
    fill_log(world, prior_rows)
    assert statements_per_tool(world) == STATEMENTS[connection.vendor]
