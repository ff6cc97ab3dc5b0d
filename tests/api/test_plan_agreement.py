"""A plan answers as the action would (docs/architecture.md#revert-and-undo: plans before acts): for
every caller, over a cascade that includes other people's calls, the plan is 403 exactly when the
revert or undo is (each leaving the same security event), lists as conflicts exactly what the action
refuses with a 409, and otherwise lists exactly what the action then reverts."""

from typing import Any

import pytest

from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from audit.services import invocation_dispatch
from tests.api.conftest import campaign_url, client_for

pytestmark = pytest.mark.django_db

ROLES = ["actor", "owner", "cogm", "other"]


def hit_goblin(world, actor, delta: int) -> ToolInvocation:
    row = invocation_dispatch(
        campaign=world.campaign,
        actor=actor,
        turn=world.turn(actor),
        tool_name="modify_creature",
        input={"creature_id": world.goblin.pk, "hp_delta": delta},
        source=InvocationOrigin.GM,
    )
    assert row.status == ToolInvocation.Status.COMMITTED
    return row


@pytest.fixture
def calls(world) -> list[ToolInvocation]:
    """The player's call, then the owner's (the GM's hand) and the other player's on the same
    goblin: reverting the first with cascade reverts calls of two other people."""
    return [hit_goblin(world, who, -1) for who in (world.player, world.owner, world.other)]


def urls(world, kind: str, first: ToolInvocation) -> tuple[str, str]:
    if kind == "undo":
        base = f"turns/{first.turn_id}/"
        return campaign_url(world, base + "undo-plan/"), campaign_url(world, base + "undo/")
    base = f"invocations/{first.pk}/"
    return campaign_url(world, base + "revert-plan/"), campaign_url(world, base + "revert/")


def reverted_ids(kind: str, body: dict[str, Any], first: ToolInvocation) -> list[str]:
    if kind == "undo":
        return body["reverted"]
    return [*body["details"]["cascaded"], str(first.pk)]


def denials() -> list[tuple[str, int, str]]:
    return list(SecurityEvent.objects.order_by("pk").values_list("kind", "user_id", "target"))


def assert_plan_matches_action(world, user, kind: str, cascade: bool, first: ToolInvocation):
    client = client_for(user)
    plan_url, action_url = urls(world, kind, first)
    plan = client.get(plan_url, {"cascade": "true" if cascade else "false"})
    planned_denials = denials()
    action = client.post(action_url, {"cascade": cascade}, format="json")

    if plan.status_code == 403:
        assert action.status_code == 403, action.content
        assert len(planned_denials) == 1 and denials() == planned_denials * 2
        return
    assert plan.status_code == 200 and planned_denials == []
    body = plan.json()
    if body["conflicts"]:
        assert action.status_code == 409, action.content
        assert action.json()["conflicts"] == body["conflicts"]
    else:
        assert action.status_code == 200, action.content
        planned = [i["id"] for i in body["invocations"] if i["skip_reason"] is None]
        assert sorted(reverted_ids(kind, action.json(), first)) == sorted(planned)
    assert denials() == []


@pytest.mark.parametrize("cascade", [True, False])
@pytest.mark.parametrize("kind", ["undo", "revert"])
@pytest.mark.parametrize("role", ROLES)
def test_the_plan_agrees_with_the_action_over_others_calls(world, calls, role, kind, cascade):
    user = {"actor": world.player, "owner": world.owner, "cogm": world.cogm, "other": world.other}
    assert_plan_matches_action(world, user[role], kind, cascade, calls[0])


EXPECTED_CASCADE_PLAN = {"actor": 403, "owner": 200, "cogm": 200, "other": 403}


@pytest.mark.parametrize("kind", ["undo", "revert"])
@pytest.mark.parametrize("role", ROLES)
def test_a_cascade_over_calls_the_caller_may_not_revert_is_planned_as_403(world, calls, role, kind):
    """The player may revert their own call, but its cascade reverts the owner's and the other
    player's: the plan refuses it, as the undo does, naming the first call in the way."""
    user = {"actor": world.player, "owner": world.owner, "cogm": world.cogm, "other": world.other}
    plan_url, _ = urls(world, kind, calls[0])
    plan = client_for(user[role]).get(plan_url, {"cascade": "true"})
    assert plan.status_code == EXPECTED_CASCADE_PLAN[role], plan.content
    if role == "actor":
        event = SecurityEvent.objects.get()
        assert (event.kind, event.user, event.target) == (
            SecurityEvent.Kind.REVERT_DENIED,
            world.player,
            str(calls[2].pk),  # newest first: the other player's call is met first
        )
    if plan.status_code == 200:
        ids = [i["id"] for i in plan.json()["invocations"]]
        assert ids == [str(c.pk) for c in reversed(calls)]


@pytest.mark.parametrize("kind", ["undo", "revert"])
def test_a_later_call_that_cannot_be_reverted_is_a_conflict_in_plan_and_action(world, calls, kind):
    ToolInvocation.objects.filter(pk=calls[1].pk).update(revertible=False)
    plan_url, _ = urls(world, kind, calls[0])
    plan = client_for(world.owner).get(plan_url, {"cascade": "true"})
    assert plan.status_code == 200 and plan.json()["conflicts"] == [str(calls[1].pk)]
    assert_plan_matches_action(world, world.owner, kind, True, calls[0])
