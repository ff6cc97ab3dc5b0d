"""Campaigns in the admin: read with their members and world; only name and policy change."""

import pytest
from django.urls import reverse

from audit.models import ToolInvocation
from campaigns.models import ApprovalPolicyChange, Campaign
from tests.admin.conftest import call, move
from tests.conftest import make_user

# The world starts where a new campaign does (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("at_the_default_policy")


def campaign_url(campaign):
    return reverse("admin:campaigns_campaign_change", args=[campaign.pk])


def test_campaign_page_shows_members_creatures_resources_and_inventory(staff_client, world):
    call(world, "give_item", {"creature_id": world.hero.pk, "item": "rope", "quantity": 2})
    response = staff_client.get(campaign_url(world.campaign))
    assert response.status_code == 200
    html = response.content.decode()
    for text in ("cogm", "Thorin", "Goblin", "spell_slot", "rope", "Tool invocations"):
        assert text in html
    titles = [
        inline.opts.verbose_name_plural for inline in response.context["inline_admin_formsets"]
    ]
    assert titles == [
        "memberships",
        "creatures",
        "resources",
        "inventory",
        "approval policy changes",
    ]
    assert f"?campaign={world.campaign.pk}" in html


def test_a_superuser_may_rename_but_not_add_or_delete(client, world):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    Campaign.objects.filter(pk=world.campaign.pk).update(event_seq=41, scene="Night.")
    stale_page = client.get(campaign_url(world.campaign))
    assert stale_page.status_code == 200
    Campaign.objects.filter(pk=world.campaign.pk).update(event_seq=42, scene="Dawn.")
    response = client.post(
        campaign_url(world.campaign),
        {
            "name": "The Risen Keep",
            "approval_policy": "none",
            **_empty_inlines(stale_page),
        },
    )
    assert response.status_code == 302, response.context["adminform"].errors
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    assert (campaign.name, campaign.approval_policy) == ("The Risen Keep", "none")
    assert (campaign.event_seq, campaign.scene) == (42, "Dawn.")  # nothing stale written back
    assert client.get(reverse("admin:campaigns_campaign_add")).status_code == 403
    delete = reverse("admin:campaigns_campaign_delete", args=[world.campaign.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert Campaign.objects.filter(pk=world.campaign.pk).exists()


@pytest.mark.parametrize(
    "policy", [p for p in Campaign.ApprovalPolicy.values if p != Campaign.ApprovalPolicy.CRITICAL]
)
def test_a_policy_changed_in_the_admin_is_logged_with_who_and_what(client, world, policy):
    root = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(root)
    page = client.get(campaign_url(world.campaign))
    data = {"name": world.campaign.name, "approval_policy": policy, **_empty_inlines(page)}
    assert client.post(campaign_url(world.campaign), data).status_code == 302
    assert Campaign.objects.get(pk=world.campaign.pk).approval_policy == policy
    change = ApprovalPolicyChange.objects.get()
    assert (change.by, change.from_policy, change.to_policy, change.via) == (
        root,
        "critical",
        policy,
        "admin",
    )
    html = client.get(campaign_url(world.campaign)).content.decode()
    assert "Approval policy changes" in html and "root" in html


def test_the_form_refuses_an_unknown_policy(client, world):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    page = client.get(campaign_url(world.campaign))
    data = {"name": "Renamed", "approval_policy": "paranoid", **_empty_inlines(page)}
    response = client.post(campaign_url(world.campaign), data)
    assert response.status_code == 200
    assert "approval_policy" in response.context["adminform"].form.errors
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    assert (campaign.name, campaign.approval_policy) == (world.campaign.name, "critical")
    assert not ApprovalPolicyChange.objects.exists()


def test_renaming_leaves_the_policy_and_its_log_alone(client, world):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    page = client.get(campaign_url(world.campaign))
    data = {"name": "Renamed", "approval_policy": "critical", **_empty_inlines(page)}
    assert client.post(campaign_url(world.campaign), data).status_code == 302
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    assert (campaign.name, campaign.approval_policy) == ("Renamed", "critical")
    assert not ApprovalPolicyChange.objects.exists()


def _empty_inlines(page):
    """The management form of every read-only inline, as the browser would send it."""
    data = {}
    for inline in page.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        data.update({management.add_prefix(k): v for k, v in management.initial.items()})
    return data


def test_the_campaign_page_offers_no_delete(staff_client, world):
    move(world, 2)
    assert ToolInvocation.objects.count() == 1
    html = staff_client.get(campaign_url(world.campaign)).content.decode()
    assert "deletelink" not in html
