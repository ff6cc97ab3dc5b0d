"""The affected player's voice (docs/architecture.md#human-in-the-loop): the player of a character
a held critical call would change may object, which rejects it with their reason; nobody else
may, approval stays with the approvers, and an objection racing an approval resolves once."""

import pytest

from audit.chain import verify
from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from audit.services.approval import invocation_approve, invocation_object
from campaigns.models import Campaign, Creature
from core.errors import Conflict, Forbidden, InvalidInput
from tests.conftest import all_at_once, build_world, call, dump

Status = ToolInvocation.Status


def policy(world, name: str = "critical") -> None:
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy=name)
    world.campaign.refresh_from_db()


def held_on(world, creature, tool="modify_creature", data=None) -> ToolInvocation:
    """The GM's call on `creature` in the owner's turn, held by the policy."""
    row = call(
        world,
        tool,
        data or {"creature_id": creature.pk, "hp_delta": -30},
        actor=world.owner,
        turn=world.turn(world.owner),
        source=InvocationOrigin.GM,
    )
    assert row.status == Status.AWAITING_APPROVAL, row.error
    return row


def object_to(world, row, user, reason="that was last round's roll"):
    return invocation_object(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=user, reason=reason
    )


def test_the_characters_player_objects_and_the_call_is_rejected_with_their_reason(world):
    policy(world)
    row = held_on(world, world.hero)  # Thorin, the player's PC, would drop to 0
    before = dump(world.campaign)
    outcome = object_to(world, row, world.player)
    row.refresh_from_db()
    assert (outcome.status, row.status) == ("rejected", Status.REJECTED)
    link = row.transitions.get()
    assert (link.from_status, link.to_status, link.by) == (
        Status.AWAITING_APPROVAL,
        Status.REJECTED,
        world.player,
    )
    assert link.reason == "player objected to this call: that was last round's roll"
    assert dump(world.campaign) == before
    assert Creature.objects.get(pk=world.hero.pk).hp == 20
    assert verify(world.campaign.pk) is None


@pytest.mark.parametrize("who", ["other", "owner", "cogm"])
def test_nobody_but_the_characters_player_may_object(world, who):
    policy(world)
    row = held_on(world, world.hero)
    user = world.owner if who == "owner" else world.cogm if who == "cogm" else world.other
    with pytest.raises(Forbidden):
        object_to(world, row, user)
    row.refresh_from_db()
    assert row.status == Status.AWAITING_APPROVAL
    assert list(SecurityEvent.objects.values_list("kind", "user_id", "target")) == [
        (SecurityEvent.Kind.APPROVAL_DENIED, user.pk, str(row.pk))
    ]


def test_a_call_on_a_monster_has_no_player_to_object(world):
    policy(world)
    row = held_on(world, world.goblin, data={"creature_id": world.goblin.pk, "hp_delta": -3})
    with pytest.raises(Forbidden):
        object_to(world, row, world.player)


def test_a_held_call_below_critical_is_not_objectable(world):
    policy(world, "critical_and_high")
    row = held_on(
        world,
        world.hero,
        tool="consume_resource",
        data={"creature_id": world.hero.pk, "resource": "spell_slot", "amount": 1},
    )
    assert row.tool_tier == "high"
    with pytest.raises(Forbidden):
        object_to(world, row, world.player)


def test_an_objection_says_why(world):
    policy(world)
    row = held_on(world, world.hero)
    with pytest.raises(InvalidInput):
        object_to(world, row, world.player, reason="   ")
    row.refresh_from_db()
    assert row.status == Status.AWAITING_APPROVAL


def test_object_then_approve_resolves_once(world):
    policy(world)
    row = held_on(world, world.hero)
    object_to(world, row, world.player)
    with pytest.raises(Conflict):
        invocation_approve(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    row.refresh_from_db()
    assert row.status == Status.REJECTED and row.transitions.count() == 1
    assert not ToolInvocation.objects.filter(approval_of=row).exists()
    assert Creature.objects.get(pk=world.hero.pk).hp == 20


def test_approve_then_object_resolves_once(world):
    policy(world)
    row = held_on(world, world.hero)
    invocation_approve(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    with pytest.raises(Conflict):
        object_to(world, row, world.player)
    row.refresh_from_db()
    assert row.status == Status.PENDING and row.transitions.count() == 1
    assert Creature.objects.get(pk=world.hero.pk).hp == 0


@pytest.mark.django_db(transaction=True)
def test_object_racing_approve_on_two_connections_resolves_exactly_once():
    world = build_world()
    policy(world)
    for _ in range(5):
        Creature.objects.filter(pk=world.hero.pk).update(hp=20)
        row = held_on(world, world.hero)
        outcomes = all_at_once(
            lambda row=row: object_to(world, row, world.player),
            lambda row=row: invocation_approve(
                campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
            ),
        )
        losers = [o for o in outcomes if isinstance(o, Exception)]
        assert len(losers) == 1 and isinstance(losers[0], Conflict), outcomes
        row.refresh_from_db()
        assert row.transitions.count() == 1
        ran = ToolInvocation.objects.filter(approval_of=row)
        hp = Creature.objects.get(pk=world.hero.pk).hp
        if row.status == Status.REJECTED:  # the objection stood
            assert (ran.count(), hp) == (0, 20)
        else:
            assert (row.status, ran.count(), hp) == (Status.PENDING, 1, 0)
    assert verify(world.campaign.pk) is None
