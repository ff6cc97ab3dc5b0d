"""Campaign set-up over HTTP: campaigns, members and the revert grant, the world, state."""

import pytest
from guardian.core import ObjectPermissionChecker

from audit.models import SecurityEvent
from campaigns.models import ApprovalPolicyChange, Campaign, Creature, Resource
from campaigns.selectors import campaign_state
from tests.api.conftest import campaign_url, client_for, dump
from tests.conftest import make_user
from web.api.serializers import StateSerializer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("at_the_default_policy")]


def test_creating_a_campaign_makes_the_caller_its_owner_with_the_revert_grant():
    user = make_user("gm")
    response = client_for(user).post(
        "/api/campaigns/", {"name": "Night Market", "approval_policy": "none"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["owner"] == "gm" and body["approval_policy"] == "none"
    assert body["members"] == [{"username": "gm", "role": "owner", "can_revert_any": True}]
    campaign = Campaign.objects.get(pk=body["id"])
    assert ObjectPermissionChecker(user).has_perm("revert_any_turn", campaign)


def test_a_campaign_created_without_a_policy_starts_watchful():
    response = client_for(make_user("gm")).post("/api/campaigns/", {"name": "Ash"}, format="json")
    assert response.status_code == 201 and response.json()["approval_policy"] == "watchful"
    campaign = Campaign.objects.get(pk=response.json()["id"])
    assert campaign.approval_policy == Campaign.ApprovalPolicy.WATCHFUL


@pytest.mark.parametrize("policy", Campaign.ApprovalPolicy.values)
def test_every_policy_may_be_chosen_at_creation(policy):
    response = client_for(make_user("gm")).post(
        "/api/campaigns/", {"name": "Ash", "approval_policy": policy}, format="json"
    )
    assert response.status_code == 201 and response.json()["approval_policy"] == policy
    assert Campaign.objects.get().approval_policy == policy
    assert not ApprovalPolicyChange.objects.exists()


def test_an_unknown_policy_at_creation_is_a_400_naming_the_field():
    response = client_for(make_user("gm")).post(
        "/api/campaigns/", {"name": "Ash", "approval_policy": "paranoid"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["detail"] == 'approval_policy: "paranoid" is not a valid choice.'
    assert not Campaign.objects.exists()


def test_the_owner_changes_the_policy_and_the_change_is_logged(world, as_owner):
    response = as_owner.patch(campaign_url(world), {"approval_policy": "adaptive"}, format="json")
    assert response.status_code == 200 and response.json()["approval_policy"] == "adaptive"
    assert Campaign.objects.get(pk=world.campaign.pk).approval_policy == "adaptive"
    change = ApprovalPolicyChange.objects.get()
    assert (change.campaign, change.by, change.from_policy, change.to_policy, change.via) == (
        world.campaign,
        world.owner,
        "critical",
        "adaptive",
        "api",
    )


def test_setting_the_policy_it_already_has_logs_nothing(world, as_owner):
    response = as_owner.patch(campaign_url(world), {"approval_policy": "critical"}, format="json")
    assert response.status_code == 200
    assert not ApprovalPolicyChange.objects.exists()


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"approval_policy": "paranoid"}, 'approval_policy: "paranoid" is not a valid choice.'),
        ({}, "Send approval_policy, approval_timeout or both."),
        ({"approval_policy": "none", "name": "x"}, "name: Unknown field."),
    ],
)
def test_a_bad_policy_change_is_a_400_and_changes_nothing(world, as_owner, body, detail):
    response = as_owner.patch(campaign_url(world), body, format="json")
    assert response.status_code == 400 and response.json()["detail"] == detail
    assert Campaign.objects.get(pk=world.campaign.pk).approval_policy == "critical"
    assert not ApprovalPolicyChange.objects.exists()


@pytest.mark.parametrize("who", ["player", "cogm", "staff"])
def test_members_and_staff_who_do_not_own_it_may_not_change_the_policy(world, staff, who):
    user = staff if who == "staff" else getattr(world, who)
    response = client_for(user).patch(
        campaign_url(world), {"approval_policy": "none"}, format="json"
    )
    assert response.status_code == 403
    event = SecurityEvent.objects.get()
    assert (event.user, event.campaign, event.target) == (
        user,
        world.campaign,
        "campaign_set_policy",
    )
    assert Campaign.objects.get(pk=world.campaign.pk).approval_policy == "critical"
    assert not ApprovalPolicyChange.objects.exists()


@pytest.mark.parametrize("who", ["outsider", None])
def test_strangers_get_404_and_anonymous_401_on_a_policy_change(world, who):
    user = getattr(world, who) if who else None
    response = client_for(user).patch(
        campaign_url(world), {"approval_policy": "none"}, format="json"
    )
    assert response.status_code == (404 if user else 401)
    assert Campaign.objects.get(pk=world.campaign.pk).approval_policy == "critical"
    assert not SecurityEvent.objects.exists() and not ApprovalPolicyChange.objects.exists()


def test_the_list_holds_only_the_callers_campaigns(world):
    response = client_for(world.player).get("/api/campaigns/")
    assert response.status_code == 200
    assert [c["id"] for c in response.json()["results"]] == [str(world.campaign.pk)]
    assert response.json()["next"] is None


def test_campaign_detail_has_exactly_the_contract_keys(world, as_player):
    body = as_player.get(campaign_url(world)).json()
    assert set(body) == {
        "id",
        "name",
        "owner",
        "status",
        "approval_policy",
        "approval_timeout",
        "members",
    }
    members = {m["username"]: m for m in body["members"]}
    assert members["cogm"] == {"username": "cogm", "role": "player", "can_revert_any": True}
    assert members["player"]["can_revert_any"] is False
    assert members["owner"]["role"] == "owner"


def test_the_owner_adds_a_member_and_grants_then_withdraws_revert_any(world, as_owner):
    newbie = make_user("newbie")
    url = campaign_url(world, "members/")
    granted = as_owner.post(url, {"username": "newbie", "can_revert_any": True}, format="json")
    assert granted.status_code == 201
    assert granted.json() == {"username": "newbie", "role": "player", "can_revert_any": True}
    assert ObjectPermissionChecker(newbie).has_perm("revert_any_turn", world.campaign)
    withdrawn = as_owner.post(url, {"username": "newbie"}, format="json")
    assert withdrawn.status_code == 201
    assert not ObjectPermissionChecker(newbie).has_perm("revert_any_turn", world.campaign)


def test_adding_an_unknown_user_is_404_and_re_adding_the_owner_is_409(world, as_owner):
    url = campaign_url(world, "members/")
    assert as_owner.post(url, {"username": "ghost"}, format="json").status_code == 404
    conflict = as_owner.post(url, {"username": "owner"}, format="json")
    assert conflict.status_code == 409
    assert conflict.json() == {"detail": "The owner is already a member.", "conflicts": []}


def test_the_owner_creates_creatures_resources_chapters_and_dungeons(world, as_owner):
    creature = as_owner.post(
        campaign_url(world, "creatures/"),
        {"name": "Wight", "kind": "monster", "hp": 20, "max_hp": 22, "x": 4, "y": 9},
        format="json",
    )
    assert creature.status_code == 201
    assert creature.json()["hp"] == 20 and creature.json()["controlled_by"] is None
    cid = creature.json()["id"]
    resource = as_owner.post(
        campaign_url(world, f"creatures/{cid}/resources/"),
        {"name": "breath", "current": 1, "maximum": 1, "recharge": "short_rest"},
        format="json",
    )
    assert resource.status_code == 201
    assert Resource.objects.get(pk=resource.json()["id"]).creature_id == cid
    chapter = as_owner.post(campaign_url(world, "chapters/"), {"title": "Epilogue"}, format="json")
    assert chapter.status_code == 201 and chapter.json()["position"] == 4
    dungeon = as_owner.post(campaign_url(world, "dungeons/"), {"name": "Ossuary"}, format="json")
    assert dungeon.status_code == 201 and dungeon.json()["name"] == "Ossuary"


def test_a_player_creates_their_own_pc_and_it_defaults_to_them(world, as_player):
    response = as_player.post(
        campaign_url(world, "creatures/"),
        {"name": "Sidekick", "kind": "pc", "hp": 8, "max_hp": 8},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["controlled_by"] == "player"
    assert Creature.objects.get(pk=response.json()["id"]).controlled_by == world.player


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Dragon", "kind": "monster", "hp": 200, "max_hp": 200},
        {"name": "Puppet", "kind": "pc", "hp": 5, "max_hp": 5, "controlled_by": "other"},
    ],
)
def test_a_player_may_not_create_monsters_or_others_pcs(world, as_player, body):
    before = dump(world.campaign)
    response = as_player.post(campaign_url(world, "creatures/"), body, format="json")
    assert response.status_code == 403
    event = SecurityEvent.objects.get()
    assert (event.user, event.campaign, event.target) == (
        world.player,
        world.campaign,
        "creature_create",
    )
    assert dump(world.campaign) == before


def test_creature_rules_of_the_service_are_422(world, as_owner):
    response = as_owner.post(
        campaign_url(world, "creatures/"),
        {"name": "Odd", "kind": "monster", "hp": 9, "max_hp": 3},
        format="json",
    )
    assert response.status_code == 422
    assert response.json() == {"detail": "hp must be between 0 and max_hp."}


def test_a_resource_for_a_creature_of_another_campaign_is_404(world, as_owner):
    response = as_owner.post(
        campaign_url(world, f"creatures/{world.foreign.pk}/resources/"),
        {"name": "luck", "current": 1, "maximum": 1},
        format="json",
    )
    assert response.status_code == 404
    assert not Resource.objects.filter(creature=world.foreign).exists()


@pytest.mark.parametrize(
    "tail,body",
    [
        ("chapters/", {"title": "Coup"}),
        ("dungeons/", {"name": "Vault"}),
        ("members/", {"username": "outsider"}),
        ("creatures/{hero}/resources/", {"name": "luck", "current": 1, "maximum": 1}),
    ],
)
def test_other_set_up_is_for_the_owner_only_even_for_a_co_gm(world, tail, body):
    before = dump(world.campaign)
    url = campaign_url(world, tail.format(hero=world.hero.pk))
    response = client_for(world.cogm).post(url, body, format="json")
    assert response.status_code == 403
    assert SecurityEvent.objects.get().kind == SecurityEvent.Kind.ADMIN_DENIED
    assert dump(world.campaign) == before


def test_state_serves_the_canonical_dump(world, as_player):
    response = as_player.get(campaign_url(world, "state/"))
    assert response.status_code == 200
    assert response.json() == {"seq": world.campaign.event_seq, **campaign_state(world.campaign)}


def test_the_documented_state_names_every_table_of_the_dump(world):
    """The schema's StateSerializer is built from STATE_TABLES: a table added to the dump
    without it would go undocumented."""
    assert list(StateSerializer().fields) == ["seq", *campaign_state(world.campaign)]
