"""Set-up from the campaign page: each form does what its API twin does, refuses what it refuses
with the same message, answers a plain POST with a redirect and the page's script with JSON,
and keeps to the API's permissions (404 for strangers, 403 and a security event for members
without the right) and to CSRF."""

import html
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from rest_framework.test import APIClient

from audit.models import SecurityEvent
from campaigns.models import Chapter, Creature, Dungeon, Membership, Resource
from tests.conftest import World, make_user, recorded_denial, signed_in

JSON = {"HTTP_ACCEPT": "application/json"}


def page_url(world: World, tail: str) -> str:
    return f"/campaigns/{world.campaign.pk}/{tail}"


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def owner_client(world: World) -> Client:
    return signed_in(world.owner)


def test_owner_adds_a_monster_with_a_plain_post_and_is_sent_back_to_the_page(
    world: World, owner_client: Client
):
    response = owner_client.post(
        page_url(world, "creatures/"),
        {"name": "Rat", "kind": "monster", "hp": "3", "max_hp": "4", "x": "2", "y": ""},
    )
    assert response.status_code == 302
    assert response["Location"] == page_url(world, "#creatures")
    rat = Creature.objects.get(campaign=world.campaign, name="Rat")
    assert (rat.kind, rat.hp, rat.max_hp, rat.x, rat.y, rat.controlled_by) == (
        "monster",
        3,
        4,
        2,
        0,
        None,
    )


def test_owner_adds_a_pc_for_a_member_npc_resource_chapter_and_dungeon(
    world: World, owner_client: Client
):
    posts = [
        (
            "creatures/",
            {"name": "Vex", "kind": "pc", "hp": "9", "max_hp": "9", "controlled_by": "other"},
        ),
        ("creatures/", {"name": "Innkeeper", "kind": "npc", "hp": "4", "max_hp": "4"}),
        (
            "resources/",
            {
                "creature_id": str(world.hero.pk),
                "name": "rage",
                "current": "2",
                "maximum": "3",
                "recharge": "long_rest",
            },
        ),
        ("chapters/", {"title": "Epilogue"}),
        ("dungeons/", {"name": "Sewers"}),
    ]
    for tail, data in posts:
        response = owner_client.post(page_url(world, tail), data, **JSON)
        assert response.status_code == 201, response.content
        assert "id" in response.json()
    assert Creature.objects.get(name="Vex").controlled_by == world.other
    assert Creature.objects.get(name="Innkeeper").kind == "npc"
    rage = Resource.objects.get(creature=world.hero, name="rage")
    assert (rage.current, rage.maximum, rage.recharge) == (2, 3, "long_rest")
    assert Chapter.objects.filter(campaign=world.campaign, title="Epilogue", position=4).exists()
    assert Dungeon.objects.filter(campaign=world.campaign, name="Sewers").exists()


def test_owner_adds_a_member_by_username_and_can_make_them_co_gm(
    world: World, owner_client: Client
):
    newcomer = make_user("newcomer")
    response = owner_client.post(
        page_url(world, "members/"), {"username": "newcomer", "can_revert_any": "on"}
    )
    assert response.status_code == 302
    membership = Membership.objects.get(campaign=world.campaign, user=newcomer)
    assert membership.role == "player"
    assert newcomer.has_perm("campaigns.revert_any_turn", world.campaign)


@pytest.mark.parametrize(
    "tail, api_tail, data",
    [
        ("creatures/", "creatures/", {"name": "Rat", "kind": "monster", "hp": "9", "max_hp": "4"}),
        ("creatures/", "creatures/", {"name": "Rat", "kind": "dragon", "hp": "1", "max_hp": "4"}),
        ("creatures/", "creatures/", {"name": "Rat", "kind": "monster", "hp": "-1", "max_hp": "4"}),
        ("creatures/", "creatures/", {"kind": "monster", "hp": "1", "max_hp": "4"}),
        ("members/", "members/", {"username": "nobody-here"}),
        ("members/", "members/", {"username": "owner"}),
        ("chapters/", "chapters/", {"title": "x" * 201}),
        ("dungeons/", "dungeons/", {}),
        (
            "resources/",
            "creatures/{hero}/resources/",
            {"name": "ki", "current": "1", "maximum": "1"},
        ),
        (
            "resources/",
            "creatures/{hero}/resources/",
            {"name": "rage", "current": "5", "maximum": "1"},
        ),
    ],
)
def test_a_refused_form_says_what_the_api_says(
    world: World, owner_client: Client, tail: str, api_tail: str, data: dict
):
    before = Creature.objects.count(), Resource.objects.count(), Chapter.objects.count()
    typed = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in data.items()}
    via_api = api(world.owner).post(
        f"/api/campaigns/{world.campaign.pk}/{api_tail.format(hero=world.hero.pk)}",
        typed,
        format="json",
    )
    form = {**data, "creature_id": str(world.hero.pk)} if tail == "resources/" else data
    scripted = owner_client.post(page_url(world, tail), form, **JSON)
    plain = owner_client.post(page_url(world, tail), form)
    assert via_api.status_code >= 400
    assert scripted.status_code == via_api.status_code
    assert scripted.json()["detail"] == via_api.json()["detail"]
    assert plain.status_code == via_api.status_code
    shown = f'<p class="form-error" role="alert">{via_api.json()["detail"]}</p>'
    assert shown in html.unescape(plain.content.decode())
    assert (Creature.objects.count(), Resource.objects.count(), Chapter.objects.count()) == before


def test_a_player_creates_their_own_character(world: World, player_client: Client):
    response = player_client.post(
        page_url(world, "creatures/"), {"name": "Pip", "kind": "pc", "hp": "8", "max_hp": "8"}
    )
    assert response.status_code == 302
    pip = Creature.objects.get(name="Pip")
    assert (pip.kind, pip.controlled_by) == ("pc", world.player)


def test_the_player_sees_the_character_form_and_no_owner_forms(
    world: World, player_client: Client, owner_client: Client
):
    player_page = player_client.get(page_url(world, "")).content.decode()
    owner_page = owner_client.get(page_url(world, "")).content.decode()
    assert 'id="character"' in player_page and 'id="setup"' not in player_page
    assert 'id="hand"' not in player_page
    assert 'id="setup"' in owner_page and 'id="hand"' in owner_page
    assert 'id="character"' not in owner_page
    assert 'import "./table/setup.js";' in Path(finders.find("js/table.js")).read_text()


@pytest.mark.parametrize(
    "tail, data",
    [
        ("creatures/", {"name": "Dragon", "kind": "monster", "hp": "50", "max_hp": "50"}),
        (
            "creatures/",
            {"name": "Spy", "kind": "pc", "hp": "5", "max_hp": "5", "controlled_by": "other"},
        ),
        ("members/", {"username": "outsider"}),
        ("chapters/", {"title": "Mine"}),
        ("dungeons/", {"name": "Mine"}),
        ("resources/", {"name": "rage", "current": "1", "maximum": "1"}),
        ("invites/", {"expires_in_hours": "24"}),
    ],
)
def test_a_player_may_not_set_up_the_table(
    world: World, player_client: Client, tail: str, data: dict
):
    form = {**data, "creature_id": str(world.hero.pk)} if tail == "resources/" else data
    before = (Creature.objects.count(), Membership.objects.count(), Chapter.objects.count())
    response = player_client.post(page_url(world, tail), form, **JSON)
    assert response.status_code == 403
    assert (Creature.objects.count(), Membership.objects.count(), Chapter.objects.count()) == before
    kind, user, campaign, _target, _ip = recorded_denial()
    assert (kind, user, campaign) == (SecurityEvent.Kind.ADMIN_DENIED, world.player, world.campaign)


def test_a_stranger_gets_404_and_leaves_no_trace(world: World):
    stranger = signed_in(world.outsider)
    for tail in ("creatures/", "members/", "chapters/", "hand/", "invites/"):
        response = stranger.post(page_url(world, tail), {"name": "x"})
        assert response.status_code == 404
    assert not SecurityEvent.objects.exists()
    assert not Creature.objects.filter(name="x").exists()


def test_set_up_posts_need_the_csrf_token(world: World):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.owner)
    data = {"name": "Rat", "kind": "monster", "hp": "3", "max_hp": "3"}
    assert client.post(page_url(world, "creatures/"), data).status_code == 403
    assert not Creature.objects.filter(name="Rat").exists()
    page = client.get(page_url(world, "")).content.decode()
    token = client.cookies["csrftoken"].value
    assert 'name="csrfmiddlewaretoken"' in page
    response = client.post(page_url(world, "creatures/"), {**data, "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert Creature.objects.filter(name="Rat").exists()


def test_set_up_pages_only_take_posts(world: World, owner_client: Client):
    assert owner_client.get(page_url(world, "creatures/")).status_code == 405
