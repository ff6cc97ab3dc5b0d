"""The audited dispatch's SQL is fixed per tool and does not grow with the log. What the log adds
to every call is pinned here (OVERHEAD); what a call of a tool runs beyond it is declared on the
tool, beside the examples it is measured with (`example_statements`), so a new tool declares its
count in its own file and nothing here names a tool.

The log's overhead (4): BEGIN (here a savepoint: the test's transaction is outside), the
campaign row lock (which also reads the log head and the event number), the one statement that
writes the log (the row, its write/read-set entries, the campaign's log head and event number,
the undone-turn check), COMMIT (here: release).

What one `modify_creature` adds (2: 6 in all, where the same write done bare runs 5): the
creature (the tool's own read, which also serves the snapshot) and the tool's UPDATE (the row
as saved is the post-state). With the fog in play it adds one more, what players may see of its
event (`campaigns.visibility.player_envelopes`): the broadcast's read, made at most once per
call and only for events that name a creature not known to be a PC (a facet of one, or a non-PC
whole) while some cell is revealed, which the campaign lock's statement tells (`fog_in_play`).
It is counted with the tool because which events a call sends follows from what the tool writes
(one per entity), as does the log's read-back of each row the tool wrote other than through
`ToolContext.save` (a row it created). A tool's own reads and writes vary (end_adventure unlocks
an achievement per member, with a savepoint each; rest restores every resource); each tool says
what its count is made of, beside the number."""

from collections.abc import Iterable

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from ai_tools import registry
from ai_tools.base import WriteTool
from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from campaigns.models import Campaign, Creature
from tests.ai_tools.examples import example_input
from tests.conftest import (
    World,
    commit,
    fill_log,
    fog_over_the_goblin,
    rolled_back,
)

pytestmark = pytest.mark.django_db

# Statements every dispatch runs whatever its tool, BEGIN and COMMIT included.
OVERHEAD = 4


def statements_beyond_the_log(world: World, tools: Iterable[WriteTool]) -> dict[str, int]:
    """What one dispatch of each tool's first example runs beyond the log's overhead, each tool
    from the same world."""
    counts = {}
    for tool in tools:
        with rolled_back():
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
            counts[tool.name] = len(queries) - OVERHEAD
    return counts


def assert_every_tool_runs_its_declared_statements(world: World) -> None:
    tools = registry.write_tools()
    declared = {tool.name: tool.example_statements for tool in tools}
    assert statements_beyond_the_log(world, tools) == declared


@pytest.mark.parametrize("prior_rows", [1, 200])
def test_each_tools_dispatch_runs_the_logs_overhead_and_its_declared_statements(world, prior_rows):
    fill_log(world, prior_rows)
    assert_every_tool_runs_its_declared_statements(world)


def test_with_the_fog_in_play_a_call_naming_a_creature_reads_what_players_may_see(world: World):
    """The read the example world spares comes back as soon as one cell is revealed (what it
    keeps from the players: tests/realtime/test_fog_events.py)."""
    fog_over_the_goblin(world)
    counts = {}
    for name, creature in (("hero", world.hero), ("goblin", world.goblin)):
        turn = world.turn(actor=world.owner)
        with CaptureQueriesContext(connection) as queries:
            row = invocation_dispatch(
                campaign=world.campaign,
                actor=world.owner,
                tool_name="modify_creature",
                input={"creature_id": creature.pk, "hp_delta": -1},
                turn=turn,
            )
        assert row.status == ToolInvocation.Status.COMMITTED, row.error
        counts[name] = len(queries) - OVERHEAD
    declared = registry.write_tool("modify_creature").example_statements
    assert counts == {"hero": declared + 1, "goblin": declared + 1}


# Lookups of the connection in one dispatch: Django's own for the ORM's statements (the campaign
# lock, the tool's read and write of its target), its transaction's three, and two by the log's
# append (its parameters and its cursor). Each use of `django.db.connection` (a proxy) is one
# more: the append's parameters alone would make about fifty a call without the connection they
# hold.
CONNECTION_LOOKUPS = 9


def test_the_dispatch_looks_the_connection_up_once_per_statement_it_makes(world, monkeypatch):
    """A use of `django.db.connection` looks the connection up again (`connections[alias]`, an
    asgiref Local's lookup): the log's append holds the one it looked up instead, and hands that
    to the fields that prepare its parameters."""
    hit = {"creature_id": world.goblin.pk, "hp_delta": -1}
    commit(world, "modify_creature", hit)  # the SQL texts and the readings, made once
    handler = type(connections)
    lookup, looked_up = handler.__getitem__, []

    def counted(self, alias):
        looked_up.append(alias)
        return lookup(self, alias)

    monkeypatch.setattr(handler, "__getitem__", counted)
    row = commit(world, "modify_creature", hit)
    monkeypatch.undo()

    assert row.status == ToolInvocation.Status.COMMITTED, row.error
    assert 0 < len(looked_up) <= CONNECTION_LOOKUPS, len(looked_up)


def test_the_dispatchs_statements_are_prepared_on_the_server_once_run_a_few_times(world):
    """Parameters are bound on the server and a statement a connection keeps running is parsed
    and planned there once (settings: `server_side_binding`, psycopg's `prepare_threshold`): the
    hot path's lock, the tool's read and write of its target and the log's append are prepared
    after a few calls, whatever their values."""
    query = "SELECT statement FROM pg_prepared_statements"
    with connection.cursor() as cursor:
        cursor.execute(query)
        before = {statement for (statement,) in cursor.fetchall()}
        for hp_delta in range(1, 8):
            commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1})
            commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": hp_delta})
        cursor.execute(query)
        prepared = {statement for (statement,) in cursor.fetchall()} - before

    quote = connection.ops.quote_name
    campaigns, creatures = quote(Campaign._meta.db_table), quote(Creature._meta.db_table)
    log = quote(ToolInvocation._meta.db_table)
    assert any(f"FROM {campaigns} WHERE" in s and s.endswith("FOR UPDATE") for s in prepared)
    assert any(s.startswith("SELECT ") and f"FROM {creatures} WHERE" in s for s in prepared)
    assert any(s.startswith(f"UPDATE {creatures} SET ") for s in prepared), prepared
    assert any(s.startswith(f"WITH w0 AS (INSERT INTO {log} (") for s in prepared), prepared
