"""What a GM turn costs the database: the statements its task makes, pinned. A turn runs at
every message a table posts for the GM, and each statement is CPU on the worker that makes it
and a round trip to the database."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import ToolInvocation
from campaigns.models import Turn
from gm.services import turn_submit
from gm.tasks import run_turn

# The claim (7: the turn's campaign, its lock, the claim, the dump stored, the watchdog's job
# and its NOTIFY), the context (2: the campaign with its members, the turns with what was said
# and done in them), `gm_turn_started` (1), two rounds stored (3 each: a step, the locks and the
# lease, the round), the call (5: a step, the dispatch's 4), its round completed (2), the
# narration's event (1) and the end (9: the locks, the narration's last event, the turn's
# calls, the message and its event, the turn's write and its event, the read back, the look
# for the next turn).
STATEMENTS = 33


def test_a_scripted_turn_with_one_tool_call_makes_its_pinned_statements(world):
    for message in ("I look around.", "I wait."):  # the context reads earlier turns too
        turn_submit(campaign=world.campaign, actor=world.player, message=message)
        run_turn.call(Turn.objects.latest("pk").pk)
    turn = turn_submit(campaign=world.campaign, actor=world.player, message="I attack the goblin")

    with CaptureQueriesContext(connection) as queries:
        assert run_turn.call(turn.pk) == f"turn {turn.pk} completed"

    # (the test's own transaction makes the durable ones savepoints)
    made = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]
    assert ToolInvocation.objects.filter(turn=turn).count() == 1
    assert len(made) == STATEMENTS, "\n".join(sql[:120] for sql in made)
