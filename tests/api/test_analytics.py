"""GET /api/analytics/tools/: per model version and tool, the numbers a count of the log gives,
for exactly the campaigns the caller may read."""

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from audit.chain import transitions_append
from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from audit.services import invocation_dispatch, invocation_revert, turn_undo
from audit.services.common import campaign_lock
from campaigns.models import Campaign
from tests.api.conftest import client_for
from tests.conftest import World, make_user

URL = "/api/analytics/tools/"
SONNET, SCRIPTED = "anthropic:claude-sonnet-4-5", "scripted"
KEYS = {
    "model",
    "tool_name",
    "calls",
    "failed",
    "reverted",
    "revert_rate",
    "awaiting",
    "approved",
    "rejected",
    "expired",
}


def dispatch(world: World, turn: Any, tool: str, data: Any, model: str, **extra: Any):
    extra.setdefault("campaign", world.campaign)
    extra.setdefault("actor", turn.actor if turn else world.owner)
    extra.setdefault("source", InvocationOrigin.GM)  # the models' calls, on players' turns
    return invocation_dispatch(tool_name=tool, input=data, turn=turn, model=model, **extra)


def build_log(world: World) -> None:
    """Two models, four tools, failures, single reverts and an undone turn, through the real
    services; and a call in another campaign."""
    hero, ally, goblin = world.hero.pk, world.ally.pk, world.goblin.pk
    first = world.turn(world.player)
    for x in (2, 3, 4):
        dispatch(world, first, "move_token", {"creature_id": hero, "x": x, "y": 1}, SONNET)
    hits = [
        dispatch(world, first, "modify_creature", {"creature_id": goblin, "hp_delta": -1}, SONNET)
        for _ in range(2)
    ]
    dispatch(world, first, "move_token", {"creature_id": hero, "x": -9, "y": 1}, SONNET)
    last_move = dispatch(world, first, "move_token", {"creature_id": hero, "x": 5, "y": 1}, SONNET)
    second = world.turn(world.other)
    dispatch(world, second, "move_token", {"creature_id": ally, "x": 6, "y": 6}, SCRIPTED)
    dispatch(world, second, "move_token", {"creature_id": ally, "x": 7, "y": 6}, SCRIPTED)
    dispatch(world, second, "set_scene", {"description": "Rain."}, SCRIPTED)
    dispatch(world, second, "give_item", {"creature_id": 999_999, "item": "x"}, SCRIPTED)
    for row in (hits[-1], last_move):
        assert invocation_revert(
            campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
        ).reverted
    turn_undo(campaign_id=world.campaign.pk, turn_id=second.pk, user=world.owner)
    elsewhere = Campaign.objects.get(owner=world.outsider)
    dispatch(
        world,
        None,
        "move_token",
        {"creature_id": world.foreign.pk, "x": 1, "y": 1},
        SONNET,
        campaign=elsewhere,
        actor=world.outsider,
    )


def counted(rows: Any) -> list[dict[str, Any]]:
    """The expected answer, counted row by row in Python from the log itself."""
    statuses: dict[tuple[str, str], Counter] = {}
    for model, tool, status in rows.values_list("model", "tool_name", "status"):
        statuses.setdefault((model, tool), Counter())[status] += 1
    expected = []
    for (model, tool), n in sorted(statuses.items()):
        ran = n["committed"] + n["reverted"]
        expected.append(
            {
                "model": model,
                "tool_name": tool,
                "calls": sum(n.values()),
                "failed": n["failed"],
                "reverted": n["reverted"],
                "revert_rate": round(n["reverted"] / ran, 4) if ran else 0.0,
                "awaiting": n["awaiting_approval"],
                "approved": 0,
                "rejected": n["rejected"],
                "expired": n["expired"],
            }
        )
    return expected


@pytest.fixture
def log(world: World) -> World:
    build_log(world)
    return world


def test_the_owner_reads_what_a_count_of_the_log_gives(log: World):
    response = client_for(log.owner).get(URL, {"campaign": str(log.campaign.pk)})
    assert response.status_code == 200
    body = response.json()
    assert body == counted(ToolInvocation.objects.filter(campaign=log.campaign))
    assert all(set(row) == KEYS for row in body)
    moves = next(r for r in body if (r["model"], r["tool_name"]) == (SONNET, "move_token"))
    assert (moves["calls"], moves["failed"], moves["reverted"], moves["revert_rate"]) == (
        5,
        1,
        1,
        0.25,
    )


def test_without_a_campaign_an_owner_reads_only_the_campaigns_they_own(log: World):
    mine = client_for(log.owner).get(URL).json()
    assert mine == counted(ToolInvocation.objects.filter(campaign=log.campaign))
    theirs = client_for(log.outsider).get(URL).json()
    assert theirs == counted(ToolInvocation.objects.exclude(campaign=log.campaign))
    assert client_for(log.player).get(URL).json() == []


def test_staff_with_the_audit_permission_read_every_campaign_or_one(log: World, staff):
    assert client_for(staff).get(URL).json() == counted(ToolInvocation.objects.all())
    one = client_for(staff).get(URL, {"campaign": str(log.campaign.pk)}).json()
    assert one == counted(ToolInvocation.objects.filter(campaign=log.campaign))


def test_since_leaves_out_older_calls(log: World):
    cut = timezone.now() - timedelta(days=1)
    old = ToolInvocation.objects.filter(campaign=log.campaign, tool_name="move_token")
    old.update(created_at=cut - timedelta(hours=1))
    response = client_for(log.owner).get(
        URL, {"campaign": str(log.campaign.pk), "since": cut.isoformat()}
    )
    assert response.status_code == 200
    recent = ToolInvocation.objects.filter(campaign=log.campaign, created_at__gte=cut)
    assert response.json() == counted(recent)
    assert "move_token" not in {row["tool_name"] for row in response.json()}


def resolve(world: World, row: ToolInvocation, outcome: str) -> None:
    """An approval's outcome as the approval service records it: the row's new status and a
    chained transition out of awaiting_approval, in one transaction under the campaign lock."""
    with transaction.atomic():
        campaign_lock(world.campaign.pk)
        row.status = outcome
        row.save(update_fields=["status"])
        transitions_append(
            campaign_id=world.campaign.pk,
            changes=[(row, "awaiting_approval")],
            by=world.owner,
            reason="",
            at=timezone.now(),
        )


def test_approval_outcomes_are_counted(log: World):
    """Four calls written awaiting approval (set by hand before anything reads them: until the
    dispatch writes such rows, these stand for them), then approved, rejected and expired as
    chained transitions: the figures follow, read before and after."""
    rows = ToolInvocation.objects.filter(campaign=log.campaign)
    held = list(
        rows.filter(status__in=["committed", "failed"], transitions__isnull=True).order_by(
            "sequence"
        )[:4]
    )
    ToolInvocation.objects.filter(pk__in=[r.pk for r in held]).update(status="awaiting_approval")
    owner = client_for(log.owner)
    body = owner.get(URL, {"campaign": str(log.campaign.pk)}).json()
    assert body == counted(rows) and sum(row["awaiting"] for row in body) == 4
    approved, rejected, expired = (ToolInvocation.objects.get(pk=r.pk) for r in held[:3])
    resolve(log, approved, "committed")
    resolve(log, rejected, "rejected")
    resolve(log, expired, "expired")
    body = owner.get(URL, {"campaign": str(log.campaign.pk)}).json()
    expected = counted(rows)
    for row in expected:
        row["approved"] = int(
            (row["model"], row["tool_name"]) == (approved.model, approved.tool_name)
        )
    assert body == expected
    totals = Counter()
    for row in body:
        totals.update({k: row[k] for k in ("awaiting", "approved", "rejected", "expired")})
    assert totals == {"awaiting": 1, "approved": 1, "rejected": 1, "expired": 1}


@pytest.mark.parametrize(
    ("who", "code"),
    [("owner", 200), ("staff", 200), ("cogm", 403), ("player", 403), ("outsider", 404)],
)
def test_who_may_read_one_campaigns_figures(log: World, staff, who: str, code: int):
    user = staff if who == "staff" else getattr(log, who)
    response = client_for(user).get(URL, {"campaign": str(log.campaign.pk)})
    assert response.status_code == code
    events = list(SecurityEvent.objects.values_list("user", "campaign", "target"))
    if code == 403:
        assert (
            response.json()["detail"]
            == "Only the campaign owner (or staff) may read its analytics."
        )
        assert events == [(user.pk, log.campaign.pk, "analytics")]
    else:
        assert events == []


def test_anonymous_is_401_and_staff_without_the_permission_are_strangers(log: World):
    assert client_for().get(URL).status_code == 401
    clerk = make_user("clerk", is_staff=True)
    assert client_for(clerk).get(URL, {"campaign": str(log.campaign.pk)}).status_code == 404
    assert client_for(clerk).get(URL).json() == []


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ({"campaign": "nope"}, "campaign: Must be a valid UUID."),
        ({"since": "yesterday"}, "since: Datetime has wrong format."),
    ],
)
def test_bad_parameters_are_a_400_naming_them(log: World, query: dict, detail: str):
    response = client_for(log.owner).get(URL, query)
    assert response.status_code == 400 and response.json()["detail"].startswith(detail)


def test_an_unknown_campaign_is_a_404(log: World, staff):
    unknown = "00000000-0000-0000-0000-000000000000"
    assert client_for(staff).get(URL, {"campaign": unknown}).status_code == 404
