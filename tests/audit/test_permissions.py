"""The may-revert policy: actor, owner, co-GM with the grant, staff; 404 before 403."""

import pytest
from django.contrib.auth.models import Permission, User

from audit.models import SecurityEvent
from audit.permissions import may_revert
from audit.services import invocation_dispatch, invocation_revert, turn_undo
from campaigns.services import membership_add
from core.errors import Forbidden, NotFound
from tests.conftest import recorded_denial


@pytest.fixture
def row(world):
    return invocation_dispatch(
        campaign=world.campaign,
        actor=world.player,
        tool_name="move_token",
        input={"creature_id": world.hero.pk, "x": 9, "y": 9},
    )


@pytest.mark.parametrize(
    "who,allowed",
    [
        ("player", True),
        ("owner", True),
        ("cogm", True),
        ("other", False),
    ],
)
def test_policy_for_each_member_role(world, row, who, allowed):
    user = getattr(world, who)
    assert may_revert(user=user, campaign=world.campaign, actor_id=row.user_id) is allowed


def test_actor_and_owner_are_decided_without_a_query(world, row, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert may_revert(user=world.player, campaign=world.campaign, actor_id=row.user_id)
        assert may_revert(user=world.owner, campaign=world.campaign, actor_id=row.user_id)


def test_staff_with_the_global_permission_may_revert(world, row, staff):
    assert may_revert(user=staff, campaign=world.campaign, actor_id=row.user_id)
    plain_staff = User.objects.create_user("plainstaff", is_staff=True)
    assert not may_revert(user=plain_staff, campaign=world.campaign, actor_id=row.user_id)


def test_grant_can_be_withdrawn(world, row):
    membership_add(
        campaign=world.campaign, by=world.owner, username=world.cogm.username, can_revert_any=False
    )
    cogm = User.objects.get(pk=world.cogm.pk)  # fresh permission cache
    assert not may_revert(user=cogm, campaign=world.campaign, actor_id=row.user_id)


def test_other_member_is_forbidden_and_leaves_a_security_event(world, row):
    with pytest.raises(Forbidden):
        invocation_revert(
            campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.other, ip="203.0.113.9"
        )
    assert recorded_denial() == (
        "revert_denied",
        world.other,
        world.campaign,
        str(row.pk),
        "203.0.113.9",
    )
    row.refresh_from_db()
    assert row.status == "committed"


def test_non_member_gets_not_found_and_no_security_event(world, row):
    with pytest.raises(NotFound):
        invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.outsider)
    assert not SecurityEvent.objects.exists()


def test_invocation_of_another_campaign_is_not_found(world, row):
    elsewhere = world.foreign.campaign
    with pytest.raises(NotFound):
        invocation_revert(campaign_id=elsewhere.pk, invocation_id=row.pk, user=world.outsider)
    with pytest.raises(NotFound):
        invocation_revert(
            campaign_id=world.campaign.pk, invocation_id="not-a-uuid", user=world.owner
        )


def test_turn_undo_by_other_member_is_forbidden(world):
    turn = world.turn()
    with pytest.raises(Forbidden):
        turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.other)
    assert SecurityEvent.objects.get().target == f"turn:{turn.pk}"


def test_a_deactivated_user_holding_every_right_may_not_revert(world, row):
    """The owner, who is also the call's actor, staff with the global permission and holder of
    the campaign grant, is deactivated: the admin, the GM and direct service callers rely on the
    policy (not on a login check elsewhere) to refuse them."""
    owner = world.owner
    owner.is_staff = True
    owner.save()
    owner.user_permissions.add(Permission.objects.get(codename="revert_toolinvocation"))
    own_row = invocation_dispatch(
        campaign=world.campaign,
        actor=owner,
        tool_name="move_token",
        input={"creature_id": world.goblin.pk, "x": 1, "y": 1},
    )
    owner = User.objects.get(pk=owner.pk)  # fresh permission caches
    assert may_revert(user=owner, campaign=world.campaign, actor_id=own_row.user_id)

    User.objects.filter(pk=owner.pk).update(is_active=False)
    inactive = User.objects.get(pk=owner.pk)
    assert not may_revert(user=inactive, campaign=world.campaign, actor_id=own_row.user_id)
    assert not may_revert(user=inactive, campaign=world.campaign, actor_id=row.user_id)
    with pytest.raises(Forbidden):
        invocation_revert(campaign_id=world.campaign.pk, invocation_id=own_row.pk, user=inactive)
    own_row.refresh_from_db()
    assert own_row.status == "committed"
    assert SecurityEvent.objects.get().user == inactive
