"""Approval over HTTP: 202 with a preview, the permission matrix of approve and reject (exact
codes and security events), 409 with a fresh preview, the detail with who answered."""

import pytest

from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from campaigns.models import Campaign, Creature
from tests.api.conftest import campaign_url, client_for
from tests.conftest import call, held_hit

Status = ToolInvocation.Status
ROLES = ["actor", "owner", "cogm", "other", "outsider", "anonymous", "staff"]
EXPECTED = {
    #          actor owner cogm other outsider anonymous staff
    "approve": (403, 200, 200, 403, 404, 401, 200),
    "reject": (200, 200, 200, 403, 404, 401, 200),
}


@pytest.fixture
def held(world):
    """The GM's hit on the goblin in the player's turn, held under the `critical` policy."""
    return held_hit(world, world.player)


def caller(world, staff, role):
    return {
        "actor": world.player,
        "owner": world.owner,
        "cogm": world.cogm,
        "other": world.other,
        "outsider": world.outsider,
        "anonymous": None,
        "staff": staff,
    }[role]


@pytest.mark.parametrize("action", sorted(EXPECTED))
@pytest.mark.parametrize("role", ROLES)
def test_who_may_approve_and_reject(world, staff, held, role, action):
    user = caller(world, staff, role)
    response = client_for(user).post(
        campaign_url(world, f"invocations/{held.pk}/{action}/"), {}, format="json"
    )
    expected = EXPECTED[action][ROLES.index(role)]
    assert response.status_code == expected, response.content
    held.refresh_from_db()
    hp = Creature.objects.get(pk=world.goblin.pk).hp
    events = list(SecurityEvent.objects.values_list("kind", "user_id", "campaign_id", "target"))
    if expected == 403:
        assert events == [
            (SecurityEvent.Kind.APPROVAL_DENIED, user.pk, world.campaign.pk, str(held.pk))
        ]
    else:
        assert events == []
    if expected != 200:
        assert (held.status, hp) == (Status.AWAITING_APPROVAL, 7)
    elif action == "approve":
        assert response.json()["status"] == "committed" and (held.status, hp) == (Status.PENDING, 2)
    else:
        assert response.json()["status"] == "rejected" and (held.status, hp) == (Status.REJECTED, 7)


def test_a_held_tool_call_is_202_with_its_preview(world):
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    turn = world.turn(world.player)
    response = client_for(world.owner).post(
        campaign_url(world, f"turns/{turn.pk}/tool-calls/"),
        {"tool": "modify_creature", "input": {"creature_id": world.goblin.pk, "set_hp": 0}},
        format="json",
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "awaiting_approval"
    assert body["preview"]["diff"] == [
        {"entity": "creature", "id": str(world.goblin.pk), "field": "hp", "before": 7, "after": 0}
    ]
    assert "critical" in body["preview"]["reason"]
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7


def test_a_stale_preview_is_409_with_the_fresh_one(world, held):
    call(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -3},
        source=InvocationOrigin.USER,
    )
    response = client_for(world.owner).post(campaign_url(world, f"invocations/{held.pk}/approve/"))
    assert response.status_code == 409
    assert response.json()["preview"]["diff"][0]["before"] == 4
    assert response.json()["preview"]["diff"][0]["after"] == 0
    held.refresh_from_db()
    assert held.status == Status.AWAITING_APPROVAL


def test_the_detail_shows_the_preview_and_who_answered_and_when(world, held):
    client = client_for(world.owner)
    url = campaign_url(world, f"invocations/{held.pk}/")
    waiting = client.get(url).json()
    assert waiting["preview"]["diff"][0]["after"] == 2 and waiting["approval"] is None
    assert waiting["expires_at"] is not None
    approved = client.post(url + "approve/").json()
    detail = client.get(url).json()
    assert detail["status"] == "pending" and detail["expires_at"] is None
    assert detail["approval"]["status"] == "approved" and detail["approval"]["by"] == "owner"
    assert detail["approval"]["ran_as"] == approved["ran_as"]
    ran = client.get(campaign_url(world, f"invocations/{approved['ran_as']}/")).json()
    assert ran["approval_of"] == str(held.pk) and ran["status"] == "committed"


def test_reject_takes_a_reason_and_the_turns_player_withdraws_rather_than_rejects(world, held):
    response = client_for(world.player).post(
        campaign_url(world, f"invocations/{held.pk}/reject/"),
        {"reason": "not that goblin"},
        format="json",
    )
    assert response.status_code == 200
    detail = client_for(world.player).get(campaign_url(world, f"invocations/{held.pk}/")).json()
    assert detail["approval"]["reason"] == "player withdrew this call: not that goblin"


@pytest.mark.parametrize("action,expected", [("approve", 403), ("reject", 200)])
def test_a_co_gm_may_not_approve_a_call_on_their_own_turn(world, action, expected):
    """The grant that lets a co-GM approve others' calls does not let them sign off on what
    the AI does for them; the owner answers for the table, on their own turn too."""
    row = held_hit(world, world.cogm)
    url = campaign_url(world, f"invocations/{row.pk}/{action}/")
    assert client_for(world.cogm).post(url, {}, format="json").status_code == expected
    if expected == 403:
        assert SecurityEvent.objects.get().kind == SecurityEvent.Kind.APPROVAL_DENIED
        assert client_for(world.owner).post(url, {}, format="json").status_code == 200
