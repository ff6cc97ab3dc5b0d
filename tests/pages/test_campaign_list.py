"""The campaign list: a user's own tables and a form to start one."""

from django.test import Client

from campaigns.models import Campaign, Membership
from tests.conftest import World


def test_campaign_list_requires_login(client: Client):
    response = client.get("/campaigns/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/campaigns/"


def test_campaign_list_shows_only_the_users_campaigns(world: World, player_client: Client):
    response = player_client.get("/campaigns/")
    assert response.status_code == 200
    assert list(response.context["campaigns"]) == [world.campaign]
    assert b"The Sunken Keep" in response.content
    assert b"Elsewhere" not in response.content
    assert f'href="/campaigns/{world.campaign.pk}/"'.encode() in response.content


def test_the_owner_sees_that_they_run_the_table(world: World, client: Client):
    client.force_login(world.owner)
    assert b"You run this table" in client.get("/campaigns/").content


def test_creating_a_campaign_makes_the_user_its_owner_and_opens_it(
    world: World, player_client: Client
):
    response = player_client.post("/campaigns/", {"name": "  Frost Giants  "})
    campaign = Campaign.objects.get(name="Frost Giants")
    assert response.status_code == 302
    assert response["Location"] == f"/campaigns/{campaign.pk}/"
    assert campaign.owner == world.player
    assert Membership.objects.get(campaign=campaign, user=world.player).role == "owner"


def test_a_campaign_needs_a_name(world: World, player_client: Client):
    response = player_client.post("/campaigns/", {"name": "   "})
    assert response.status_code == 200
    assert b'role="alert"' in response.content
    assert Campaign.objects.filter(owner=world.player).count() == 0


def test_the_form_offers_every_policy_with_watchful_chosen(player_client: Client):
    form = player_client.get("/campaigns/").context["form"]
    field = form["approval_policy"]
    assert [value for value, _ in field.field.choices] == Campaign.ApprovalPolicy.values
    assert field.value() == "watchful"


def test_a_campaign_is_created_with_the_policy_chosen(world: World, player_client: Client):
    player_client.post("/campaigns/", {"name": "Frost", "approval_policy": "adaptive"})
    assert Campaign.objects.get(name="Frost").approval_policy == "adaptive"
    player_client.post("/campaigns/", {"name": "Fire"})
    assert Campaign.objects.get(name="Fire").approval_policy == "watchful"


def test_an_unknown_policy_is_refused_with_a_message(world: World, player_client: Client):
    response = player_client.post("/campaigns/", {"name": "Frost", "approval_policy": "x"})
    assert response.status_code == 200
    assert "approval_policy" in response.context["form"].errors
    assert not Campaign.objects.filter(name="Frost").exists()
