"""The permission matrix: every role against every guarded action, over HTTP.

A non-member never learns the campaign exists (404), anonymous callers must authenticate (401),
a member without the right is refused (403) and exactly those refusals leave a SecurityEvent.
"""

import pytest

from audit.models import SecurityEvent, ToolInvocation
from tests.api.conftest import campaign_url, client_for, dump, log_dump, play_turn
from tests.conftest import make_user

ROLES = ["actor", "owner", "cogm", "other", "outsider", "anonymous", "staff"]

EXPECTED = {
    #              actor owner cogm other outsider anonymous staff
    "view_log": (200, 200, 200, 200, 404, 401, 200),
    "revert": (200, 200, 200, 403, 404, 401, 200),
    "undo": (200, 200, 200, 403, 404, 401, 200),
    "tool_call": (201, 201, 403, 403, 404, 401, 403),
    "add_member": (403, 201, 403, 403, 404, 401, 403),
}

DENIAL_KIND = {
    "revert": SecurityEvent.Kind.REVERT_DENIED,
    "undo": SecurityEvent.Kind.REVERT_DENIED,
    "tool_call": SecurityEvent.Kind.TOOL_CALL_DENIED,
    "add_member": SecurityEvent.Kind.ADMIN_DENIED,
}


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


def perform(client, world, played, action):
    row, turn = played.rows[0], played.turn
    if action == "view_log":
        return client.get(campaign_url(world, "invocations/"))
    if action == "revert":
        return client.post(campaign_url(world, f"invocations/{row.pk}/revert/"), format="json")
    if action == "undo":
        return client.post(campaign_url(world, f"turns/{turn.pk}/undo/"), format="json")
    if action == "tool_call":
        return client.post(
            campaign_url(world, f"turns/{turn.pk}/tool-calls/"),
            {"tool": "move_token", "input": {"creature_id": world.hero.pk, "x": 7, "y": 7}},
            format="json",
        )
    make_user("newbie")
    return client.post(campaign_url(world, "members/"), {"username": "newbie"}, format="json")


@pytest.mark.django_db
@pytest.mark.parametrize("action", list(EXPECTED))
@pytest.mark.parametrize("role", ROLES)
def test_permission_matrix(world, staff, role, action):
    played = play_turn(world)
    user = caller(world, staff, role)
    expected = EXPECTED[action][ROLES.index(role)]
    before, log_before = dump(world.campaign), log_dump(world.campaign)

    response = perform(client_for(user), world, played, action)

    assert response.status_code == expected, response.content
    assert response.json()["detail"] if expected >= 400 else response.json()
    events = list(SecurityEvent.objects.all())
    if expected == 403:
        assert len(events) == 1
        event = events[0]
        assert (event.kind, event.user, event.campaign) == (
            DENIAL_KIND[action],
            user,
            world.campaign,
        )
        assert event.ip == "127.0.0.1"
    else:
        assert events == []
    if expected >= 400:
        assert dump(world.campaign) == before
        assert log_dump(world.campaign) == log_before
    if action in ("revert", "undo") and expected == 200:
        assert ToolInvocation.objects.get(pk=played.rows[0].pk).status == "reverted"
