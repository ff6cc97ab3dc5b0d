"""The log's reads made in plain SQL for the page's push (`audit.selectors`): each returns
what the ORM's read of the same rows returns, and nothing of another campaign or turn."""

import pytest
from django.db.models import Exists, OuterRef

from audit.models import ToolInvocation
from audit.selectors import (
    calls_outside_turns,
    held_call_rows,
    later_turn_actors,
    turn_and_later_actors,
    turn_feed,
)
from audit.services.approval import invocation_approve
from audit.services.revert import turn_undo
from campaigns.models import ChatMessage, Turn
from campaigns.selectors import turn_get
from core.errors import NotFound
from tests.conftest import World, commit, held_hit, narrate

pytestmark = pytest.mark.django_db

CALL_VALUES = (
    "turn_id", "pk", "approval_of_id", "reverted_by__username", "revert_reason", "tool_name",
    "input", "status", "error", "user__username", "requested_by__username", "source",
    "revert_snapshot", "post_state",
)  # fmt: skip


def fields(row) -> list:
    return [getattr(row, f.attname) for f in type(row)._meta.concrete_fields]


def hit(world: World, turn: Turn) -> ToolInvocation:
    data = {"creature_id": world.goblin.pk, "hp_delta": -1}
    return commit(world, "modify_creature", data, actor=turn.actor, turn=turn)


def test_the_feed_reads_each_turn_its_shown_messages_and_its_calls(world: World):
    world.turn(world.player, "I wait.")  # a turn past the limit below
    undone = world.turn(world.player, "I swing.")
    hit(world, undone)
    narrate(undone, "You miss.")
    turn_undo(campaign_id=world.campaign.pk, turn_id=undone.pk, user=world.owner, reason="no")
    held = held_hit(world, world.other)
    invocation_approve(campaign_id=world.campaign.pk, invocation_id=held.pk, user=world.owner)
    live = world.turn(world.player, "I duck.")
    gone = narrate(live, "Withdrawn words.")
    ChatMessage.objects.filter(pk=gone.pk).update(reverted=True)
    turns, messages, calls = turn_feed(campaign=world.campaign, limit=3)

    expected = Turn.objects.filter(campaign=world.campaign).annotate(
        retried=Exists(Turn.objects.filter(retry_of=OuterRef("pk"))),
        redone=Exists(Turn.objects.filter(redo_of=OuterRef("pk"))),
    )
    expected = list(expected.order_by("-created_at", "-pk")[:3])[::-1]
    assert [fields(t) for t in turns] == [fields(t) for t in expected]
    assert [(t.actor, t.reverted_by, t.retried, t.redone) for t in turns] == [
        (t.actor, t.reverted_by, t.retried, t.redone) for t in expected
    ]
    assert turns[0].reverted_by == world.owner
    # an undone turn's messages all (its collapsed line expands to them); a live one's shown
    assert [m.content for m in messages[undone.pk]] == ["I swing.", "You miss."]
    assert [m.content for m in messages[live.pk]] == ["I duck."]
    assert messages[live.pk][0].author == world.player
    # the approved run is the call shown, not the held row it ran for
    rows = ToolInvocation.objects.filter(turn__in=[t.pk for t in turns])
    shown = rows.exclude(Exists(ToolInvocation.objects.filter(approval_of=OuterRef("pk"))))
    by_turn = {
        t.pk: list(shown.filter(turn=t).order_by("sequence").values(*CALL_VALUES)) for t in turns
    }
    assert {pk: rows for pk, rows in calls.items() if rows} == {
        k: v for k, v in by_turn.items() if v
    }
    assert [r["approval_of_id"] for r in calls[held.turn_id]] == [held.pk]
    assert calls[undone.pk][0]["reverted_by__username"] == world.owner.username
    assert calls[undone.pk][0]["input"] == {"creature_id": world.goblin.pk, "hp_delta": -1}
    one, _, _ = turn_feed(campaign=world.campaign, limit=3, turn_id=live.pk)
    assert [t.pk for t in one] == [live.pk]


def test_a_turn_and_its_later_actors_are_read_in_one_statement(
    world: World, django_assert_num_queries
):
    first, second, third = (world.turn(actor) for actor in (world.player, world.other, world.cogm))
    Turn.objects.filter(pk=second.pk).update(reverted_at=second.created_at)
    with django_assert_num_queries(1):
        turn, later = turn_and_later_actors(campaign=world.campaign, turn_id=first.pk)
    assert fields(turn) == fields(turn_get(campaign=world.campaign, turn_id=first.pk))
    assert later == later_turn_actors(campaign=world.campaign, since=first)
    assert later == [(first.pk, world.player.pk), (third.pk, world.cogm.pk)]
    assert turn_and_later_actors(campaign=world.campaign, turn_id=second.pk)[1] == []  # undone
    elsewhere = Turn.objects.create(campaign=world.foreign.campaign, actor=world.outsider)
    for made_up in (elsewhere.pk, "x1", None, 10**15):
        with pytest.raises(NotFound):
            turn_and_later_actors(campaign=world.campaign, turn_id=made_up)


def test_held_calls_are_the_campaigns_waiting_ones_oldest_first_with_who_made_them(world: World):
    first, second = held_hit(world, world.player), held_hit(world, world.other)
    commit(world, "move_token", {"creature_id": world.orc.pk, "x": 4, "y": 4})
    held = held_call_rows(campaign=world.campaign)
    assert [fields(r) for r in held] == [fields(first), fields(second)]
    assert [r.user for r in held] == [world.player, world.other]
    assert held[0].preview == first.preview and held[0].input == first.input


def test_calls_outside_turns_are_those_that_took_effect_oldest_first(world: World):
    moved = [
        commit(world, "move_token", {"creature_id": world.orc.pk, "x": x, "y": 4})
        for x in (3, 4, 6)
    ]
    hit(world, world.turn())  # inside a turn
    rows = calls_outside_turns(campaign=world.campaign, limit=2)
    expected = ToolInvocation.objects.filter(pk__in=[m.pk for m in moved[1:]]).order_by("sequence")
    values = ("pk", "created_at", *(v for v in CALL_VALUES if v not in ("turn_id", "pk")))
    assert rows == list(expected.values(*values))
    one = calls_outside_turns(campaign=world.campaign, limit=2, invocation_id=str(moved[0].pk))
    assert [r["pk"] for r in one] == [moved[0].pk]
