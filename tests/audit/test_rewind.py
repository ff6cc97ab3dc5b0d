"""Rewind: a turn and everything after it undone, newest first, all or nothing; only by someone
who may revert every call in it (docs/architecture.md#rewind-and-redo)."""

from dataclasses import dataclass

import pytest
from django.db import transaction

from ai_tools import registry
from audit.models import SecurityEvent, StatusTransition, ToolInvocation
from audit.services import turn_rewind, turn_rewind_plan
from audit.services.hand import hand_call, token_move
from campaigns.models import ChatMessage, Turn
from core.errors import Conflict, Forbidden
from tests.conftest import World, commit, dump, held_hit

pytestmark = pytest.mark.django_db


@dataclass
class Table:
    before: str  # the world before the first of the three turns
    after: str  # ... and after all of it
    earlier: Turn  # a turn before them, which a rewind from `first` leaves alone
    first: Turn
    turns: list[Turn]  # the three turns, oldest first
    rows: list[ToolInvocation]  # every call from `first` on, oldest first


def three_turns(world: World) -> Table:
    """An earlier turn; then the player's turn (the GM hits the goblin), the owner's own hand
    (the orc loses 3 HP, a hand turn), the player dragging their token (in no turn), and the
    other player's turn (the GM moves their PC)."""
    earlier = world.turn(world.player, "I look around.")
    commit(world, "move_token", {"creature_id": world.hero.pk, "x": 2, "y": 2}, turn=earlier)
    before = dump(world.campaign)
    first = world.turn(world.player, "I attack the goblin.")
    rows = [
        commit(
            world,
            "modify_creature",
            {"creature_id": world.goblin.pk, "hp_delta": -2},
            actor=world.player,
            turn=first,
        )
    ]
    rows.append(
        hand_call(
            campaign=world.campaign,
            by=world.owner,
            tool_name="modify_creature",
            input={"creature_id": world.orc.pk, "hp_delta": -3},
        )
    )
    rows.append(token_move(campaign=world.campaign, creature=world.hero, by=world.player, x=4, y=4))
    third = world.turn(world.other, "I step aside.")
    rows.append(
        commit(
            world,
            "move_token",
            {"creature_id": world.ally.pk, "x": 6, "y": 1},
            actor=world.other,
            turn=third,
        )
    )
    assert all(r.status == ToolInvocation.Status.COMMITTED for r in rows)
    return Table(before, dump(world.campaign), earlier, first, [first, rows[1].turn, third], rows)


def rewind(world: World, turn: Turn, user=None, **kwargs):
    return turn_rewind(
        campaign_id=world.campaign.pk, turn_id=turn.pk, user=user or world.owner, **kwargs
    )


def statuses(rows):
    return [ToolInvocation.objects.get(pk=r.pk).status for r in rows]


def test_rewind_undoes_the_turn_and_every_later_one_the_gm_and_the_hand_alike(
    world, events, django_capture_on_commit_callbacks
):
    table = three_turns(world)
    with django_capture_on_commit_callbacks(execute=True):
        outcome = rewind(world, table.first, reason="we took a wrong turn")
    assert dump(world.campaign) == table.before
    assert outcome.turns == [t.pk for t in reversed(table.turns)]
    assert outcome.reverted == [str(r.pk) for r in reversed(table.rows)]  # newest first
    assert statuses(table.rows) == ["reverted"] * 4
    for turn in table.turns:
        turn.refresh_from_db()
        assert (turn.reverted_by, turn.revert_reason) == (world.owner, "we took a wrong turn")
    assert not ChatMessage.objects.filter(turn__in=table.turns, reverted=False).exists()
    table.earlier.refresh_from_db()
    assert table.earlier.reverted_at is None
    assert ToolInvocation.objects.filter(turn=table.earlier, status="committed").count() == 1
    # Every client hears each turn undone and the token move reverted, with the reason.
    sent = [(e["type"], e["turn"], e["data"]["reason"]) for e in events[-4:]]
    assert sent == [
        ("interaction_reverted", table.turns[2].pk, "we took a wrong turn"),
        ("interaction_reverted", table.turns[1].pk, "we took a wrong turn"),
        ("interaction_reverted", table.turns[0].pk, "we took a wrong turn"),
        ("invocation_reverted", None, "we took a wrong turn"),
    ]


def test_rewind_is_all_or_nothing_when_one_revert_breaks_mid_way(world, monkeypatch):
    table = three_turns(world)
    tool = registry.write_tool("modify_creature")

    def broken(ctx, snapshot):  # the owner's hand on the orc, reverted after two others
        raise ValueError("the snapshot does not fit")

    monkeypatch.setattr(tool, "revert", broken)
    log_before = list(ToolInvocation.objects.values_list("pk", "status").order_by("sequence"))
    with pytest.raises(Conflict):
        rewind(world, table.first)
    assert dump(world.campaign) == table.after
    assert list(ToolInvocation.objects.values_list("pk", "status").order_by("sequence")) == (
        log_before
    )
    assert not Turn.objects.filter(reverted_at__isnull=False).exists()
    assert not StatusTransition.objects.exists()
    assert not ChatMessage.objects.filter(reverted=True).exists()


def test_a_player_may_not_rewind_past_someone_elses_turn_and_nothing_changes(world):
    table = three_turns(world)
    with pytest.raises(Forbidden) as refused:
        rewind(world, table.first, user=world.player, ip="10.0.0.7")
    assert "other’s turn" in refused.value.detail  # names what blocks it
    assert dump(world.campaign) == table.after
    assert statuses(table.rows) == ["committed"] * 4
    assert not Turn.objects.filter(reverted_at__isnull=False).exists()
    event = SecurityEvent.objects.get()
    assert (event.kind, event.user, event.target, event.ip) == (
        "revert_denied",
        world.player,
        f"rewind:turn:{table.turns[2].pk}",
        "10.0.0.7",
    )


def test_the_plan_refuses_as_the_rewind_would_and_records_it(world):
    table = three_turns(world)
    with pytest.raises(Forbidden):
        turn_rewind_plan(campaign_id=world.campaign.pk, turn_id=table.first.pk, user=world.player)
    assert SecurityEvent.objects.count() == 1


def test_a_player_may_rewind_their_own_last_turns(world):
    first = world.turn(world.player, "I run.")
    before = dump(world.campaign)
    row = commit(
        world,
        "move_token",
        {"creature_id": world.hero.pk, "x": 9, "y": 9},
        actor=world.player,
        turn=first,
    )
    moved = token_move(campaign=world.campaign, creature=world.hero, by=world.player, x=3, y=3)
    outcome = rewind(world, first, user=world.player)
    assert outcome.reverted == [str(moved.pk), str(row.pk)]
    assert dump(world.campaign) == before


def test_the_plan_lists_every_turn_and_call_newest_first_and_changes_nothing(world):
    table = three_turns(world)
    plan = turn_rewind_plan(campaign_id=world.campaign.pk, turn_id=table.first.pk, user=world.cogm)
    assert [t["id"] for t in plan["turns"]] == [t.pk for t in reversed(table.turns)]
    assert [c["id"] for c in plan["invocations"]] == [str(r.pk) for r in reversed(table.rows)]
    assert plan["blocked"] == []
    goblin_hp = [
        d for d in plan["diff"] if d["entity"] == "creature" and d["id"] == str(world.goblin.pk)
    ]
    assert [(d["field"], d["before"], d["now"]) for d in goblin_hp] == [("hp", 7, 5)]
    assert dump(world.campaign) == table.after
    assert statuses(table.rows) == ["committed"] * 4


def test_a_call_that_cannot_be_reverted_blocks_the_rewind(world):
    table = three_turns(world)
    ToolInvocation.objects.filter(pk=table.rows[1].pk).update(revertible=False)
    plan = turn_rewind_plan(campaign_id=world.campaign.pk, turn_id=table.first.pk, user=world.owner)
    assert [c["id"] for c in plan["blocked"]] == [str(table.rows[1].pk)]
    with pytest.raises(Conflict) as blocked:
        rewind(world, table.first)
    assert blocked.value.conflicts == [str(table.rows[1].pk)]
    assert dump(world.campaign) == table.after


def test_a_later_call_of_an_earlier_turn_that_wrote_over_it_goes_too(world):
    """An earlier turn's call that ran after the rewind point (an approval answered late) wrote
    over what the rewound turn wrote: the world goes back faithfully only without it."""
    earlier = world.turn(world.player, "I wait.")
    before = dump(world.campaign)
    first = world.turn(world.player, "I strike.")
    hit = commit(
        world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -2}, turn=first
    )
    late = commit(
        world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1}, turn=earlier
    )
    outcome = rewind(world, first)
    assert outcome.reverted == [str(late.pk), str(hit.pk)]
    assert dump(world.campaign) == before
    earlier.refresh_from_db()
    assert earlier.reverted_at is None


def test_a_call_still_waiting_for_approval_in_a_rewound_turn_is_withdrawn(world):
    table = three_turns(world)
    waiting = held_hit(world, world.other)  # in a fourth turn, after the three
    rewind(world, table.first)
    waiting.refresh_from_db()
    assert waiting.status == ToolInvocation.Status.REJECTED
    assert waiting.turn.reverted_at is not None
    assert dump(world.campaign) == table.before


def test_a_second_rewind_changes_nothing(world):
    table = three_turns(world)
    rewind(world, table.first)
    again = rewind(world, table.first)
    assert (again.turns, again.reverted) == ([], [])
    assert dump(world.campaign) == table.before


def test_rewind_refuses_to_run_inside_another_transaction(world):
    table = three_turns(world)
    with pytest.raises(RuntimeError), transaction.atomic():
        rewind(world, table.first)
