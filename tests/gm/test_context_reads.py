"""What the next GM turn's context reads of the log: each past call's words, outcome and undo,
never its snapshots, sets or events (the log's widest columns, twenty turns of them at every
GM turn)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import ToolInvocation
from audit.services import invocation_revert
from campaigns.models import Creature, Turn
from gm.context import HISTORY_TURNS, gm_context
from tests.conftest import build_world, commit, gm_turn

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

    log = connection.ops.quote_name(ToolInvocation._meta.db_table)
    log_reads = [q["sql"] for q in queries if f"FROM {log}" in q["sql"]]  # subqueries too
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


def test_the_context_names_the_members_by_their_characters_and_reads_this_campaigns_turns(world):
    Creature.objects.create(
        campaign=world.campaign, name="Brin", kind="pc", hp=5, max_hp=5, controlled_by=world.player
    )
    stranger = world.outsider  # no member: the character of theirs names nobody
    Creature.objects.create(
        campaign=world.campaign, name="Ghost", kind="pc", hp=5, max_hp=5, controlled_by=stranger
    )
    elsewhere = build_world("b-")
    gm_turn(elsewhere, "Far away.", narration="Nothing here.")
    older = [gm_turn(world, f"Turn {n}.", narration=f"Reply {n}.") for n in range(HISTORY_TURNS)]
    undone = gm_turn(world, "I hide.", actor=world.other, narration="You vanish.")
    Turn.objects.filter(pk=undone.pk).update(
        reverted_at=timezone.now(), reverted_by=world.owner, revert_reason="not now"
    )
    turn = world.turn(message="What now?")
    later = gm_turn(world, "Later.", narration="Not yet.")

    context = gm_context(turn=turn)

    assert context.campaign == world.campaign and context.campaign.name == world.campaign.name
    members = [world.owner, world.player, world.other, world.cogm]
    assert context.players == {user.pk: user.username for user in members}
    assert context.speaker == f"{world.player.username} (plays Thorin, Brin)"
    assert context.message == "What now?"
    shown = older[1:]  # the last HISTORY_TURNS before it, the undone one a note among them
    assert [(p.id, p.message, p.reply) for p in context.history] == [
        (t.pk, f"Turn {n}.", f"Reply {n}.") for n, t in enumerate(shown, start=1)
    ]
    assert context.history[0].speaker == f"{world.player.username} (plays Thorin, Brin)"
    (note,) = context.undone
    assert note.startswith(f"{world.owner.username} undid the turn of {world.other.username} ")
    assert '"I hide."' in note and "not now" in note
    assert later.pk not in {p.id for p in context.history}
