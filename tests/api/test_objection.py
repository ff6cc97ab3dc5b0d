"""POST …/invocations/{iid}/object/ (docs/api.md#human-in-the-loop): the affected player's
objection over HTTP, with the codes the API promises, and the card's Object button."""

import pytest

from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from campaigns.models import Campaign, Creature
from tests.api.conftest import campaign_url, client_for
from tests.conftest import call, signed_in

Status = ToolInvocation.Status
ROLES = ["player", "other", "owner", "outsider", "anonymous"]
EXPECTED = (200, 403, 403, 404, 401)


@pytest.fixture
def held(world):
    """The GM's 30-point blow on Thorin (the player's PC) in the owner's turn, held."""
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()
    row = call(
        world,
        "modify_creature",
        {"creature_id": world.hero.pk, "hp_delta": -30},
        actor=world.owner,
        turn=world.turn(world.owner),
        source=InvocationOrigin.GM,
    )
    assert row.status == Status.AWAITING_APPROVAL
    return row


@pytest.mark.parametrize("role", ROLES)
def test_who_may_object(world, held, role):
    user = {
        "player": world.player,
        "other": world.other,
        "owner": world.owner,
        "outsider": world.outsider,
        "anonymous": None,
    }[role]
    response = client_for(user).post(
        campaign_url(world, f"invocations/{held.pk}/object/"),
        {"reason": "I was behind the door"},
        format="json",
    )
    expected = EXPECTED[ROLES.index(role)]
    assert response.status_code == expected, response.content
    held.refresh_from_db()
    events = list(SecurityEvent.objects.values_list("kind", "user_id"))
    if expected == 200:
        assert response.json() == {
            "invocation": str(held.pk),
            "status": "rejected",
            "ran_as": None,
        }
        assert held.status == Status.REJECTED and events == []
        assert held.transitions.get().reason == (
            "player objected to this call: I was behind the door"
        )
    else:
        assert held.status == Status.AWAITING_APPROVAL
        denied = [(SecurityEvent.Kind.APPROVAL_DENIED, user.pk)] if expected == 403 else []
        assert events == denied
    assert Creature.objects.get(pk=world.hero.pk).hp == 20


def test_an_objection_needs_a_reason_and_an_answered_call_is_409(world, held):
    url = campaign_url(world, f"invocations/{held.pk}/object/")
    player = client_for(world.player)
    assert player.post(url, {}, format="json").status_code == 400
    assert player.post(url, {"reason": "no"}, format="json").status_code == 200
    assert player.post(url, {"reason": "again"}, format="json").status_code == 409


def test_the_card_offers_object_to_the_characters_player_only(world, held):
    url = f"/campaigns/{world.campaign.pk}/approvals/"
    mine = signed_in(world.player).get(url).content.decode()
    theirs = signed_in(world.other).get(url).content.decode()
    gm = signed_in(world.owner).get(url).content.decode()
    assert 'value="object"' in mine and "would change your character" in mine
    assert 'value="object"' not in theirs and 'value="object"' not in gm
    assert 'value="approve"' in gm and 'value="approve"' not in mine
