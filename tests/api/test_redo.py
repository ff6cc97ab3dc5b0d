"""Redo over HTTP (docs/api.md#paths)."""

import pytest

from audit.models import SecurityEvent
from audit.services import turn_undo
from campaigns.models import Turn
from tests.api.conftest import campaign_url, client_for
from tests.audit.test_redo import gm_turn
from tests.conftest import commit, dump

pytestmark = pytest.mark.django_db


def redo_url(world, turn):
    return campaign_url(world, f"turns/{turn.pk}/redo/")


def undone(world):
    played = gm_turn(world)
    turn_undo(campaign_id=world.campaign.pk, turn_id=played.turn.pk, user=world.owner)
    return played


def test_redo_answers_the_new_turn_and_the_world_is_as_the_turn_left_it(world, as_player):
    played = undone(world)
    response = as_player.post(redo_url(world, played.turn), {}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["redo_of"] == played.turn.pk and body["status"] == "completed"
    assert [i["tool_name"] for i in body["invocations"]] == ["modify_creature", "move_token"]
    assert dump(world.campaign) == played.produced


def test_a_changed_world_is_409_with_what_changed(world, as_owner):
    played = undone(world)
    commit(world, "move_token", {"creature_id": world.hero.pk, "x": 9, "y": 9})
    response = as_owner.post(redo_url(world, played.turn), {}, format="json")
    assert response.status_code == 409
    changes = response.json()["changes"]
    assert {(c["field"], c["was"], c["now"]) for c in changes} == {("x", 1, 9), ("y", 1, 9)}
    assert not Turn.objects.filter(redo_of=played.turn).exists()


def test_403_recorded_for_a_member_who_may_not_and_404_for_a_stranger(world):
    played = undone(world)
    assert client_for(world.other).post(redo_url(world, played.turn)).status_code == 403
    assert SecurityEvent.objects.filter(user=world.other, kind="revert_denied").count() == 1
    assert client_for(world.outsider).post(redo_url(world, played.turn)).status_code == 404
    assert SecurityEvent.objects.count() == 1
    assert dump(world.campaign) == played.before


def test_a_body_with_fields_is_refused(world, as_owner):
    played = undone(world)
    response = as_owner.post(redo_url(world, played.turn), {"fresh": True}, format="json")
    assert response.status_code == 400
    assert dump(world.campaign) == played.before
