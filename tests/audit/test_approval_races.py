"""Approval races against PostgreSQL: the campaign lock lets exactly one answer stand."""

from typing import Any

import pytest
from django.test import override_settings

from audit.chain import verify
from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch, turn_undo
from audit.services.approval import invocation_approve, invocation_expire, invocation_reject
from campaigns.models import Campaign, Creature
from core.errors import Conflict
from tests.conftest import all_at_once, build_world

pytestmark = pytest.mark.django_db(transaction=True)
Status = ToolInvocation.Status


def held_world():
    world = build_world()
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()
    return world


def hold(world, turn=None) -> ToolInvocation:
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        tool_name="modify_creature",
        input={"creature_id": world.goblin.pk, "hp_delta": -5},
        turn=turn or world.turn(world.player),
        source=InvocationOrigin.GM,
    )
    assert row.status == Status.AWAITING_APPROVAL
    return row


def answered(outcomes: list[Any]) -> list[Any]:
    """The outcomes that stood; every other one must be the Conflict of a call answered."""
    losers = [o for o in outcomes if isinstance(o, Exception)]
    assert all(isinstance(o, Conflict) for o in losers), losers
    return [o for o in outcomes if not isinstance(o, Exception)]


def test_two_approvers_at_once_run_the_call_exactly_once():
    world = held_world()
    for _ in range(5):
        Creature.objects.filter(pk=world.goblin.pk).update(hp=7)
        row = hold(world)

        def approve(user, row=row) -> Any:
            return invocation_approve(
                campaign_id=world.campaign.pk, invocation_id=row.pk, user=user
            )

        won = answered(all_at_once(lambda: approve(world.owner), lambda: approve(world.cogm)))
        assert len(won) == 1
        assert ToolInvocation.objects.filter(approval_of=row).count() == 1
        assert Creature.objects.get(pk=world.goblin.pk).hp == 2
    assert verify(world.campaign.pk) is None


@override_settings(APPROVAL_TIMEOUT=1e-6)  # the expiry job is due at once
def test_approve_racing_expiry_has_exactly_one_outcome():
    world = held_world()
    for _ in range(5):
        Creature.objects.filter(pk=world.goblin.pk).update(hp=7)
        row = hold(world)
        outcomes = all_at_once(
            lambda row=row: invocation_approve(
                campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
            ),
            lambda row=row: invocation_expire(invocation_id=row.pk),
        )
        row.refresh_from_db()
        ran = ToolInvocation.objects.filter(approval_of=row)
        if row.status == Status.PENDING:  # the approval stood: the expiry found it answered
            assert outcomes[1] == "already pending" and ran.count() == 1
            assert Creature.objects.get(pk=world.goblin.pk).hp == 2
        else:  # the expiry stood: the approval was refused, nothing ran
            assert row.status == Status.EXPIRED and outcomes[1] == "expired"
            assert isinstance(outcomes[0], Conflict) and not ran.exists()
            assert Creature.objects.get(pk=world.goblin.pk).hp == 7
    assert verify(world.campaign.pk) is None


def test_approve_racing_an_undo_of_the_turn_never_commits_onto_the_undone_turn():
    world = held_world()
    for _ in range(6):
        Creature.objects.filter(pk=world.goblin.pk).update(hp=7)
        turn = world.turn(world.player)
        row = hold(world, turn)
        all_at_once(
            lambda row=row: invocation_approve(
                campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
            ),
            lambda turn=turn: turn_undo(
                campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner
            ),
        )
        turn.refresh_from_db()
        assert turn.reverted_at is not None
        assert not ToolInvocation.objects.filter(turn=turn, status=Status.COMMITTED).exists()
        assert Creature.objects.get(pk=world.goblin.pk).hp == 7
    assert verify(world.campaign.pk) is None


def test_reject_racing_approve_has_exactly_one_outcome():
    world = held_world()
    row = hold(world)
    won = answered(
        all_at_once(
            lambda: invocation_approve(
                campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
            ),
            lambda: invocation_reject(
                campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.player
            ),
        )
    )
    assert len(won) == 1
    row.refresh_from_db()
    assert row.status in (Status.PENDING, Status.REJECTED)
    assert ToolInvocation.objects.filter(approval_of=row).count() == (row.status == Status.PENDING)
