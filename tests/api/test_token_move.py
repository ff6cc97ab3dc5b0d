"""`POST /api/campaigns/{id}/creatures/{cid}/move/`: a person moves a token from the map. A player
moves their own PC only, the owner and co-GMs any token; the move is `move_token` through the
audited dispatch with the origin `user`, and undoable through the invocation's revert."""

import secrets

import pytest
from django.test import Client

from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from campaigns.models import Creature
from tests.api.conftest import campaign_url, client_for, log_dump
from tests.conftest import World, dump, recorded_denial


def move_url(world: World, creature: Creature) -> str:
    return campaign_url(world, f"creatures/{creature.pk}/move/")


def move(user, world: World, creature: Creature, body: dict):
    return client_for(user).post(move_url(world, creature), body, format="json")


def position(creature: Creature) -> tuple[int, int]:
    creature.refresh_from_db()
    return creature.x, creature.y


def test_a_player_moves_their_own_pc_through_the_log_with_source_user(
    world: World, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = move(world.player, world, world.hero, {"x": 3, "y": 4})
    assert response.status_code == 201, response.json()
    row = ToolInvocation.objects.get()
    assert response.json() == {
        "invocation": str(row.pk),
        "status": "committed",
        "result": {"creature_id": world.hero.pk, "from": [1, 1], "to": [3, 4]},
    }
    assert (row.tool_name, row.source, row.user, row.requested_by, row.turn) == (
        "move_token",
        InvocationOrigin.USER,
        world.player,
        None,
        None,
    )
    assert row.input == {"creature_id": world.hero.pk, "x": 3, "y": 4}
    assert position(world.hero) == (3, 4)
    assert [(e["type"], e["source"], e["data"]["fields"]) for e in events] == [
        ("state_changed", "user", {"x": 3, "y": 4})
    ]


@pytest.mark.parametrize("mover", ["owner", "cogm"])
@pytest.mark.parametrize("token", ["goblin", "hero"])
def test_the_owner_and_a_co_gm_move_any_token(world: World, mover: str, token: str):
    creature = getattr(world, token)
    response = move(getattr(world, mover), world, creature, {"x": 7, "y": 2})
    assert response.status_code == 201, response.json()
    assert position(creature) == (7, 2)
    assert ToolInvocation.objects.get().user == getattr(world, mover)


@pytest.mark.parametrize("token", ["goblin", "ally"])
def test_a_player_may_not_move_a_monster_or_another_players_pc_403_and_a_security_event(
    world: World, token: str
):
    creature = getattr(world, token)
    before, log = dump(world.campaign), log_dump(world.campaign)
    response = move(world.player, world, creature, {"x": 9, "y": 9})
    assert response.status_code == 403
    assert response.json() == {"detail": "Players may only move their own character's token."}
    assert recorded_denial() == (
        SecurityEvent.Kind.TOOL_CALL_DENIED,
        world.player,
        world.campaign,
        f"creature:{creature.pk}",
        "127.0.0.1",
    )
    assert dump(world.campaign) == before and log_dump(world.campaign) == log


def test_non_members_and_other_campaigns_creatures_get_404_and_nothing_moves(world: World):
    before = dump(world.campaign)
    assert move(world.outsider, world, world.hero, {"x": 3, "y": 3}).status_code == 404
    foreign = campaign_url(world, f"creatures/{world.foreign.pk}/move/")
    response = client_for(world.owner).post(foreign, {"x": 3, "y": 3}, format="json")
    assert response.status_code == 404
    assert move(None, world, world.hero, {"x": 3, "y": 3}).status_code == 401
    assert dump(world.campaign) == before
    assert not ToolInvocation.objects.exists() and not SecurityEvent.objects.exists()
    assert position(world.foreign) == (0, 0)


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"x": -1, "y": 0}, "x: Ensure this value is greater than or equal to 0."),
        ({"x": 0, "y": 1001}, "y: Ensure this value is less than or equal to 1000."),
        ({"x": "3", "y": 4}, "x: Must be an integer."),
        ({"x": 3}, "y: This field is required."),
        ({"x": 3, "y": 4, "creature_id": 1}, "creature_id: Unknown field."),
    ],
)
def test_a_cell_off_the_map_or_a_bad_body_is_400_and_logs_nothing(
    world: World, body: dict, detail: str
):
    response = move(world.player, world, world.hero, body)
    assert response.status_code == 400
    assert response.json()["detail"] == detail
    assert not ToolInvocation.objects.exists()
    assert position(world.hero) == (1, 1)


@pytest.mark.parametrize("with_token", [False, True])
def test_the_page_moves_with_its_session_only_with_the_csrf_token(world: World, with_token: bool):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.player)
    token = secrets.token_hex(16)
    client.cookies["csrftoken"] = token
    headers = {"HTTP_X_CSRFTOKEN": token} if with_token else {}
    response = client.post(
        move_url(world, world.hero), {"x": 2, "y": 3}, content_type="application/json", **headers
    )
    assert response.status_code == (201 if with_token else 403)
    assert position(world.hero) == ((2, 3) if with_token else (1, 1))


def test_the_mover_undoes_their_move_and_everyone_sees_it_go_back(
    world: World, events, django_capture_on_commit_callbacks
):
    before = dump(world.campaign)
    invocation = move(world.player, world, world.hero, {"x": 6, "y": 2}).json()["invocation"]
    revert = campaign_url(world, f"invocations/{invocation}/revert/")
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(world.player).post(revert, {}, format="json")
    assert response.status_code == 200 and response.json()["reverted"] is True
    assert dump(world.campaign) == before
    assert ToolInvocation.objects.get().status == ToolInvocation.Status.REVERTED
    (undone,) = events
    assert undone["type"] == "invocation_reverted"
    assert {"entity": "creature", "id": str(world.hero.pk)}.items() <= undone["data"]["state"][
        0
    ].items()
    assert undone["data"]["state"][0]["fields"] == {"x": 1, "y": 1}


def test_another_player_may_not_undo_someone_elses_move(world: World):
    invocation = move(world.player, world, world.hero, {"x": 6, "y": 2}).json()["invocation"]
    revert = campaign_url(world, f"invocations/{invocation}/revert/")
    assert client_for(world.other).post(revert, {}, format="json").status_code == 403
    assert position(world.hero) == (6, 2)
