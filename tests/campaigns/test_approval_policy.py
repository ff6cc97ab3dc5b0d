"""A campaign's approval policy: new campaigns start `watchful` (the default chosen from the
approval-fatigue count), existing ones keep what they had, and every change says who made it,
from what to what."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from campaigns.models import ApprovalPolicyChange, Campaign
from campaigns.services import campaign_create, campaign_set_approval_policy
from core.errors import InvalidInput
from tests.conftest import World, make_user

# The world starts where a new campaign does (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("at_the_default_policy")


BEFORE = ("campaigns", "0004_dice_roll_once_per_tool_use")
AFTER = ("campaigns", "0005_approval_policies")


@pytest.mark.django_db
def test_a_new_campaign_starts_watchful():
    campaign = campaign_create(owner=make_user("gm"), name="Ash")
    assert Campaign.objects.get(pk=campaign.pk).approval_policy == "watchful"


def test_each_change_is_logged_in_order(world: World):
    for policy in ("adaptive", "adaptive", "none"):
        campaign_set_approval_policy(
            campaign=world.campaign, by=world.owner, policy=policy, via="api"
        )
    changes = ApprovalPolicyChange.objects.filter(campaign=world.campaign).order_by("at", "id")
    assert [(c.from_policy, c.to_policy, c.by) for c in changes] == [
        ("critical", "adaptive", world.owner),
        ("adaptive", "none", world.owner),
    ]
    assert world.campaign.approval_policy == "none"
    assert Campaign.objects.get(pk=world.campaign.pk).approval_policy == "none"


def test_the_change_is_read_from_the_row_not_from_a_stale_copy(world: World):
    stale = Campaign.objects.get(pk=world.campaign.pk)
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="none")
    change = campaign_set_approval_policy(
        campaign=stale, by=world.owner, policy="adaptive", via="admin"
    )
    assert (change.from_policy, change.to_policy) == ("none", "adaptive")


def test_an_unknown_policy_is_refused_by_the_service_too(world: World):
    with pytest.raises(InvalidInput, match="approval_policy must be one of none, critical"):
        campaign_set_approval_policy(
            campaign=world.campaign, by=world.owner, policy="paranoid", via="api"
        )
    assert Campaign.objects.get(pk=world.campaign.pk).approval_policy == "critical"
    assert not ApprovalPolicyChange.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_the_policy_of_existing_campaigns():
    """Campaigns made before the default changed (stored `none`, the old default, or another
    policy) keep it: only new campaigns default to critical."""
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    old = executor.loader.project_state([BEFORE]).apps
    owner = old.get_model("auth", "User").objects.create(username="old-gm")
    OldCampaign = old.get_model("campaigns", "Campaign")
    by_default = OldCampaign.objects.create(name="Defaulted", owner=owner)
    chosen = OldCampaign.objects.create(name="Chosen", owner=owner, approval_policy="none")
    high = OldCampaign.objects.create(name="High", owner=owner, approval_policy="critical_and_high")
    executor = MigrationExecutor(connection)
    executor.migrate([AFTER])
    new = executor.loader.project_state([AFTER]).apps.get_model("campaigns", "Campaign")
    stored = dict(new.objects.values_list("pk", "approval_policy"))
    assert stored == {by_default.pk: "none", chosen.pk: "none", high.pk: "critical_and_high"}
    assert new.objects.create(name="New", owner_id=owner.pk).approval_policy == "critical"
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


WATCHFUL_BEFORE = ("campaigns", "0013_campaign_approval_timeout")
WATCHFUL_AFTER = ("campaigns", "0014_campaign_default_policy_watchful")


@pytest.mark.django_db(transaction=True)
def test_the_watchful_default_is_for_new_campaigns_only():
    """Campaigns made while `critical` was the default keep it; new ones start `watchful`."""
    executor = MigrationExecutor(connection)
    executor.migrate([WATCHFUL_BEFORE])
    old = executor.loader.project_state([WATCHFUL_BEFORE]).apps
    owner = old.get_model("auth", "User").objects.create(username="old-gm")
    OldCampaign = old.get_model("campaigns", "Campaign")
    by_default = OldCampaign.objects.create(name="Defaulted", owner=owner)
    adaptive = OldCampaign.objects.create(name="Chosen", owner=owner, approval_policy="adaptive")
    executor = MigrationExecutor(connection)
    executor.migrate([WATCHFUL_AFTER])
    new = executor.loader.project_state([WATCHFUL_AFTER]).apps.get_model("campaigns", "Campaign")
    stored = dict(new.objects.values_list("pk", "approval_policy"))
    assert stored == {by_default.pk: "critical", adaptive.pk: "adaptive"}
    assert new.objects.create(name="New", owner_id=owner.pk).approval_policy == "watchful"
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
