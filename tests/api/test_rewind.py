"""Rewind and its plan over HTTP (docs/api.md#paths)."""

import pytest

from audit.models import SecurityEvent, ToolInvocation
from campaigns.models import Turn
from tests.api.conftest import campaign_url, client_for, log_dump
from tests.audit.test_rewind import three_turns
from tests.conftest import dump

pytestmark = pytest.mark.django_db


def url(world, turn, tail):
    return campaign_url(world, f"turns/{turn.pk}/{tail}")


def test_rewind_answers_what_it_undid_and_the_world_is_as_before(world, as_owner):
    table = three_turns(world)
    response = as_owner.post(
        url(world, table.first, "rewind/"), {"reason": "retcon"}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "turns": [t.pk for t in reversed(table.turns)],
        "reverted": [str(r.pk) for r in reversed(table.rows)],
    }
    assert dump(world.campaign) == table.before
    assert set(Turn.objects.filter(revert_reason="retcon").values_list("pk", flat=True)) == {
        t.pk for t in table.turns
    }


def test_the_plan_answers_get_and_post_alike_and_changes_nothing(world, as_owner):
    table = three_turns(world)
    log = log_dump(world.campaign)
    got = as_owner.get(url(world, table.first, "rewind-plan/"))
    posted = as_owner.post(url(world, table.first, "rewind-plan/"), {}, format="json")
    assert got.status_code == posted.status_code == 200
    assert got.json() == posted.json()
    assert [t["actor"] for t in got.json()["turns"]] == ["other", "owner", "player"]
    assert len(got.json()["invocations"]) == 4
    assert log_dump(world.campaign) == log


def test_a_member_who_may_not_revert_it_all_gets_403_recorded_and_nothing_changes(world):
    table = three_turns(world)
    log = log_dump(world.campaign)
    client = client_for(world.player)
    for tail in ("rewind-plan/", "rewind/"):
        response = client.post(url(world, table.first, tail), {}, format="json")
        assert response.status_code == 403
        assert "other’s turn" in response.json()["detail"]
    assert SecurityEvent.objects.filter(kind="revert_denied", user=world.player).count() == 2
    assert log_dump(world.campaign) == log
    assert dump(world.campaign) == table.after


def test_a_stranger_gets_404_and_another_campaigns_turn_is_404(world):
    table = three_turns(world)
    assert client_for(world.outsider).post(url(world, table.first, "rewind/")).status_code == 404
    assert (
        client_for(world.outsider).get(url(world, table.first, "rewind-plan/")).status_code == 404
    )
    missing = campaign_url(world, "turns/999999/rewind/")
    assert client_for(world.owner).post(missing, {}, format="json").status_code == 404
    assert not SecurityEvent.objects.exists()


def test_a_call_that_cannot_be_reverted_is_409_naming_it(world, as_owner):
    table = three_turns(world)
    ToolInvocation.objects.filter(pk=table.rows[0].pk).update(revertible=False)
    response = as_owner.post(url(world, table.first, "rewind/"), {}, format="json")
    assert response.status_code == 409
    assert response.json()["conflicts"] == [str(table.rows[0].pk)]
    assert dump(world.campaign) == table.after


def test_unknown_fields_are_refused(world, as_owner):
    table = three_turns(world)
    response = as_owner.post(url(world, table.first, "rewind/"), {"cascade": True}, format="json")
    assert response.status_code == 400
    assert dump(world.campaign) == table.after
