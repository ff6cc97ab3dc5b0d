"""A whole session through HTTP only: sign-up, set-up, a turn with three tool calls, undo."""

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def signed_up(username: str) -> APIClient:
    anonymous = APIClient()
    body = {"username": username, "password": f"{username} rolls a natural 20"}
    assert anonymous.post("/api/auth/register/", body, format="json").status_code == 201
    token = anonymous.post("/api/auth/token/", body, format="json").json()["token"]
    return APIClient(HTTP_AUTHORIZATION=f"Token {token}")


def created(response, status: int = 201) -> dict:
    assert response.status_code == status, response.content
    return response.json()


def game_state(client: APIClient, base: str) -> dict:
    """The state dump without its `seq`, which every event advances (an undo's too)."""
    state = created(client.get(base + "state/"), 200)
    del state["seq"]
    return state


def test_undoing_a_turn_over_http_restores_the_state_and_a_second_undo_skips_all():
    gm, player = signed_up("gm"), signed_up("pia")
    campaign = created(
        gm.post("/api/campaigns/", {"name": "Ash Road", "approval_policy": "none"}, format="json")
    )
    base = f"/api/campaigns/{campaign['id']}/"
    created(gm.post(base + "members/", {"username": "pia"}, format="json"))
    hero = created(
        player.post(
            base + "creatures/",
            {"name": "Pia", "kind": "pc", "hp": 12, "max_hp": 12},
            format="json",
        )
    )
    wolf = created(
        gm.post(
            base + "creatures/",
            {"name": "Wolf", "kind": "monster", "hp": 11, "max_hp": 11, "x": 6, "y": 6},
            format="json",
        )
    )
    created(gm.post(base + "dungeons/", {"name": "Den"}, format="json"))
    before = game_state(player, base)

    turn = created(
        player.post(
            base + "turns/", {"message": "I fight the wolf.", "run_gm": False}, format="json"
        )
    )  # the GM's agent below answers it: its three tool calls are the whole turn
    calls = [
        (
            "modify_creature",
            {"creature_id": wolf["id"], "hp_delta": -6, "add_conditions": ["prone"]},
        ),
        ("move_token", {"creature_id": hero["id"], "x": 5, "y": 6}),
        ("give_item", {"creature_id": hero["id"], "item": "wolf pelt", "quantity": 1}),
    ]
    invocation_ids = []
    for tool, tool_input in calls:
        body = created(
            gm.post(
                base + f"turns/{turn['id']}/tool-calls/",
                {"tool": tool, "input": tool_input, "model": "script/1"},
                format="json",
            )
        )
        assert body["status"] == "committed"
        invocation_ids.append(body["invocation"])
    assert game_state(player, base) != before

    undone = created(player.post(base + f"turns/{turn['id']}/undo/", {}, format="json"), 200)
    assert undone == {"reverted": list(reversed(invocation_ids)), "skipped": []}
    assert game_state(player, base) == before

    again = created(player.post(base + f"turns/{turn['id']}/undo/", {}, format="json"), 200)
    assert again["reverted"] == []
    assert again["skipped"] == [
        {"id": i, "skip_reason": "already_reverted"} for i in reversed(invocation_ids)
    ]
    log = created(gm.get(base + "invocations/?status=reverted"), 200)["results"]
    assert [row["id"] for row in log] == list(reversed(invocation_ids))
    assert {row["reverted_by"] for row in log} == {"pia"}
