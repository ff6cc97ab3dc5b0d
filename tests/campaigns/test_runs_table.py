"""Who runs a table (`campaigns.permissions.runs_table`): the owner, audit staff, superusers,
and a member holding `revert_any_turn` on the campaign, given to them or to a group of theirs.
The grant is read in one statement of our own; django-guardian's checker is the oracle it must
agree with, case by case."""

import pytest
from django.contrib.auth.models import Group
from guardian.core import ObjectPermissionChecker
from guardian.shortcuts import assign_perm

from campaigns.models import Campaign
from campaigns.permissions import runs_table
from campaigns.services import REVERT_ANY_TURN, campaign_create
from tests.conftest import World, make_user


def guardian_says(user, campaign: Campaign) -> bool:
    return ObjectPermissionChecker(user).has_perm("revert_any_turn", campaign)


@pytest.mark.parametrize(
    "grant",
    ["none", "to the user", "to a group of theirs", "on another campaign", "another permission"],
)
def test_runs_table_agrees_with_guardian(world: World, grant: str):
    user = make_user("someone")
    group = Group.objects.create(name="co-GMs")
    user.groups.add(group)
    elsewhere = campaign_create(owner=world.outsider, name="Elsewhere too")
    if grant == "to the user":
        assign_perm(REVERT_ANY_TURN, user, world.campaign)
    elif grant == "to a group of theirs":
        assign_perm(REVERT_ANY_TURN, group, world.campaign)
    elif grant == "on another campaign":
        assign_perm(REVERT_ANY_TURN, group, elsewhere)
        assign_perm(REVERT_ANY_TURN, user, elsewhere)
    elif grant == "another permission":
        assign_perm("campaigns.change_campaign", user, world.campaign)
    expected = grant in ("to the user", "to a group of theirs")
    assert runs_table(campaign=world.campaign, user=user) is expected
    assert guardian_says(user, world.campaign) is expected


def test_the_owner_a_co_gm_and_a_superuser_run_it_a_player_does_not(world: World):
    boss = make_user("boss", is_superuser=True)
    assert runs_table(campaign=world.campaign, user=world.owner)
    assert runs_table(campaign=world.campaign, user=world.cogm)
    assert runs_table(campaign=world.campaign, user=boss) and guardian_says(boss, world.campaign)
    assert not runs_table(campaign=world.campaign, user=world.player)
    world.cogm.is_active = False
    assert not runs_table(campaign=world.campaign, user=world.cogm)
