"""What the next GM turn's context reads of the log: each past call's words, outcome and undo,
never its snapshots, sets or events (the log's widest columns, twenty turns of them at every
GM turn)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import ToolInvocation
from audit.services import invocation_revert
from campaigns.models import Turn
from gm.context import gm_context
from tests.conftest import commit

WIDE = ("revert_snapshot", "post_state", "write_set", "read_set", "broadcast_events")


def test_the_context_reads_past_calls_without_their_snapshots(world):
    past = world.turn(message="I hit the goblin twice.")
    hit = {"creature_id": world.goblin.pk, "hp_delta": -2}
    kept = commit(world, "modify_creature", hit, turn=past)
    undone = commit(world, "modify_creature", hit, turn=past)
    invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=undone.pk, user=world.owner, reason="a miss"
    )
    Turn.objects.filter(pk=past.pk).update(status=Turn.Status.COMPLETED)
    turn = world.turn(message="What now?")

    with CaptureQueriesContext(connection) as queries:
        context = gm_context(turn=turn)

    log_reads = [
        q["sql"] for q in queries if ToolInvocation._meta.db_table in q["sql"].split("WHERE")[0]
    ]
    assert log_reads, "the context reads the past calls"
    for sql in log_reads:
        assert not [column for column in WIDE if f'"{column}"' in sql], sql
    (answered,) = context.history
    assert [(c.id, c.tool_name, c.input) for c in answered.tool_calls] == [
        (str(kept.pk), "modify_creature", hit)
    ]
    assert answered.tool_calls[0].result == kept.result
    (note,) = context.undone
    assert world.owner.username in note and "a miss" in note and "modify_creature" in note
