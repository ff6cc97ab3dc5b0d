"""`POST …/turns/{tid}/tool-calls/`: an external agent's tool call through the audited dispatch."""

import pytest
from django.db import DatabaseError
from django.urls import reverse

from audit.models import SecurityEvent, ToolInvocation
from campaigns.models import Creature
from campaigns.services import turn_create
from tests.api.conftest import campaign_url, client_for, dump, play_turn
from tests.conftest import signed_in
from tests.infra.faults import database_drops_at

pytestmark = pytest.mark.django_db


def tool_call_url(world, turn) -> str:
    return campaign_url(world, f"turns/{turn.pk}/tool-calls/")


def test_a_committed_call_is_201_with_its_result_and_logged_as_the_turns_actor(world, as_owner):
    turn = world.turn(world.player)
    response = as_owner.post(
        tool_call_url(world, turn),
        {
            "tool": "modify_creature",
            "input": {"creature_id": world.goblin.pk, "hp_delta": -4},
            "model": "agent/v2",
        },
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"invocation", "status", "result"}
    assert body["status"] == "committed"
    row = ToolInvocation.objects.get(pk=body["invocation"])
    assert (row.user, row.turn, row.model, row.source) == (world.player, turn, "agent/v2", "api")
    assert row.requested_by == world.owner  # provenance: the owner made the call
    assert body["result"] == row.result
    assert Creature.objects.get(pk=world.goblin.pk).hp == 3


@pytest.mark.parametrize(
    "tool_input,error",
    [
        ({"creature_id": 1, "x": "far", "y": 1}, "Invalid input: input['x']"),
        ({"creature_id": 1, "x": 1}, "Invalid input: input: 'y' is a required property"),
        ("not an object", "Invalid input: input: 'not an object' is not of type 'object'"),
        ({"creature_id": 999_999, "x": 1, "y": 1}, "No creature with id 999999"),
    ],
)
def test_invalid_input_or_a_tool_error_is_422_with_the_failed_rows_id(
    world, as_player, tool_input, error
):
    turn = world.turn(world.player)
    before = dump(world.campaign)
    response = as_player.post(
        tool_call_url(world, turn), {"tool": "move_token", "input": tool_input}, format="json"
    )
    assert response.status_code == 422
    body = response.json()
    assert body["detail"].startswith(error)
    assert ToolInvocation.objects.get().requested_by is None  # the actor called it themself
    assert body["status"] == "failed" and body["result"] is None
    row = ToolInvocation.objects.get(pk=body["invocation"])
    assert (row.status, row.error) == (ToolInvocation.Status.FAILED, body["detail"])
    assert dump(world.campaign) == before


def test_a_foreign_creature_is_a_tool_error_and_nothing_is_written_elsewhere(world, as_owner):
    turn = world.turn(world.owner)
    foreign_before = dump(world.foreign.campaign)
    response = as_owner.post(
        tool_call_url(world, turn),
        {"tool": "modify_creature", "input": {"creature_id": world.foreign.pk, "hp_delta": -5}},
        format="json",
    )
    assert response.status_code == 422
    assert dump(world.foreign.campaign) == foreign_before


def test_an_unknown_tool_is_422_with_a_failed_row_of_blank_tier(world, as_owner):
    turn = world.turn(world.owner)
    play_turn(world)  # rows before it: the failed row takes the next link of the chain
    before = dump(world.campaign)
    response = as_owner.post(
        tool_call_url(world, turn), {"tool": "delete_world", "input": {"all": True}}, format="json"
    )
    assert response.status_code == 422
    body = response.json()
    assert body["detail"] == "Unknown tool 'delete_world'."
    row = ToolInvocation.objects.get(pk=body["invocation"])
    assert (row.status, row.tool_name, row.tool_tier, row.error, row.input) == (
        ToolInvocation.Status.FAILED,
        "delete_world",
        "",
        "Unknown tool 'delete_world'.",
        {"all": True},
    )
    previous = ToolInvocation.objects.get(sequence=row.sequence - 1, campaign=world.campaign)
    assert (row.sequence, row.prev_hash) == (2, previous.row_hash) and row.row_hash
    assert dump(world.campaign) == before


def test_a_blank_or_overlong_tool_name_is_400_without_a_row(world, as_owner):
    turn = world.turn(world.owner)
    for name in ("", "x" * 65):
        response = as_owner.post(
            tool_call_url(world, turn), {"tool": name, "input": {}}, format="json"
        )
        assert response.status_code == 400, name
    assert not ToolInvocation.objects.exists()


def test_an_audit_log_failure_is_503_and_the_tool_call_is_rolled_back(world, as_owner):
    turn = world.turn(world.owner)
    before = dump(world.campaign)
    with database_drops_at(
        'INSERT INTO "audit_toolinvocation"', message="disk full", raise_as=DatabaseError
    ) as struck:
        response = as_owner.post(
            tool_call_url(world, turn),
            {"tool": "move_token", "input": {"creature_id": world.goblin.pk, "x": 9, "y": 9}},
            format="json",
        )
    assert struck
    assert response.status_code == 503
    assert response.json() == {"detail": "Internal audit-log failure. Please retry."}
    assert dump(world.campaign) == before
    assert not ToolInvocation.objects.exists()


def test_a_turn_of_another_campaign_is_404(world):
    foreign_turn = turn_create(campaign=world.foreign.campaign, actor=world.outsider, message="hi")
    response = client_for(world.owner).post(
        tool_call_url(world, foreign_turn), {"tool": "advance_chapter", "input": {}}, format="json"
    )
    assert response.status_code == 404
    assert not ToolInvocation.objects.exists()


def test_a_member_who_is_neither_actor_nor_owner_gets_403_and_a_security_event(world):
    turn = world.turn(world.player)
    response = client_for(world.other).post(
        tool_call_url(world, turn), {"tool": "advance_chapter", "input": {}}, format="json"
    )
    assert response.status_code == 403
    event = SecurityEvent.objects.get()
    assert (event.kind, event.user, event.target, event.ip) == (
        SecurityEvent.Kind.TOOL_CALL_DENIED,
        world.other,
        f"turn:{turn.pk}",
        "127.0.0.1",
    )
    assert not ToolInvocation.objects.exists()


def test_an_undone_turn_takes_no_more_tool_calls(world, as_player):
    played = play_turn(world)
    as_player.post(campaign_url(world, f"turns/{played.turn.pk}/undo/"), {}, format="json")
    response = as_player.post(
        tool_call_url(world, played.turn), {"tool": "advance_chapter", "input": {}}, format="json"
    )
    assert response.status_code == 409
    assert ToolInvocation.objects.count() == 1


def test_a_logged_unknown_tool_breaks_no_reader(world, as_owner, staff):
    """The failed row of a made-up tool is read by the plan, the feed and the admin: each names
    the tool instead of asking the registry for a tool that does not exist."""
    turn = world.turn(world.owner)
    body = as_owner.post(
        tool_call_url(world, turn), {"tool": "delete_world", "input": {}}, format="json"
    ).json()
    plan = as_owner.get(campaign_url(world, f"turns/{turn.pk}/undo-plan/"))
    assert plan.status_code == 200
    assert plan.json()["invocations"] == [
        {
            "id": body["invocation"],
            "tool_name": "delete_world",
            "summary": "delete_world",
            "skip_reason": "not_committed",
        }
    ]
    page = signed_in(world.owner)
    feed = page.get(f"/campaigns/{world.campaign.pk}/feed/", {"turn": turn.pk})
    assert feed.status_code == 200 and "delete_world" in feed.content.decode()
    admin = signed_in(staff)
    detail = admin.get(reverse("admin:audit_toolinvocation_change", args=[body["invocation"]]))
    assert detail.status_code == 200 and "delete_world" in detail.content.decode()
