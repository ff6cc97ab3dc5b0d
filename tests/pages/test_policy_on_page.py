"""The owner changes the approval policy from the campaign page: logged, CSRF-protected, and
nobody else may (403 and a security event for members, 404 for strangers)."""

import pytest
from django.test import Client

from audit.models import SecurityEvent
from campaigns.models import ApprovalPolicyChange, Campaign
from tests.conftest import World, signed_in

# The world starts where a new campaign does (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("at_the_default_policy")


def policy_url(world: World) -> str:
    return f"/campaigns/{world.campaign.pk}/policy/"


def stored_policy(world: World) -> str:
    return Campaign.objects.get(pk=world.campaign.pk).approval_policy


def test_the_owner_sees_the_form_and_players_do_not(world: World, player_client: Client):
    owner_page = signed_in(world.owner).get(f"/campaigns/{world.campaign.pk}/")
    assert owner_page.context["policy_form"]["approval_policy"].value() == "critical"
    assert policy_url(world).encode() in owner_page.content
    player_page = player_client.get(f"/campaigns/{world.campaign.pk}/")
    assert "policy_form" not in player_page.context
    assert policy_url(world).encode() not in player_page.content


def test_the_owner_changes_the_policy_and_it_is_logged(world: World):
    response = signed_in(world.owner).post(policy_url(world), {"approval_policy": "none"})
    assert (
        response.status_code == 302 and response["Location"] == f"/campaigns/{world.campaign.pk}/"
    )
    assert stored_policy(world) == "none"
    change = ApprovalPolicyChange.objects.get()
    assert (change.by, change.from_policy, change.to_policy, change.via) == (
        world.owner,
        "critical",
        "none",
        "page",
    )


def test_the_form_needs_its_csrf_token(world: World):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.owner)
    assert client.post(policy_url(world), {"approval_policy": "none"}).status_code == 403
    assert stored_policy(world) == "critical"


def test_an_unknown_policy_is_a_400(world: World):
    response = signed_in(world.owner).post(policy_url(world), {"approval_policy": "x"})
    assert response.status_code == 400 and b"approval_policy" in response.content
    assert stored_policy(world) == "critical" and not ApprovalPolicyChange.objects.exists()


@pytest.mark.parametrize("who", ["player", "cogm"])
def test_members_who_do_not_own_it_get_403_and_a_security_event(world: World, who: str):
    user = getattr(world, who)
    assert signed_in(user).post(policy_url(world), {"approval_policy": "none"}).status_code == 403
    event = SecurityEvent.objects.get()
    assert (event.user, event.target) == (user, "campaign_set_policy")
    assert stored_policy(world) == "critical" and not ApprovalPolicyChange.objects.exists()


def test_a_stranger_gets_404(world: World):
    response = signed_in(world.outsider).post(policy_url(world), {"approval_policy": "none"})
    assert response.status_code == 404
    assert stored_policy(world) == "critical" and not SecurityEvent.objects.exists()
