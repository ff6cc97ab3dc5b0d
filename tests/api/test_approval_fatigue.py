"""The approval-fatigue measure (docs/architecture.md#approval-fatigue): prompts per GM turn and,
per approver, the approve rate and the time to decide — in `audit.analytics`, the API and the
admin's analytics page — and the scripted session's count that chose the default policy."""

from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from audit.models import StatusTransition
from audit.services.approval import invocation_approve, invocation_object, invocation_reject
from campaigns.models import Turn
from tests.api.conftest import client_for
from tests.conftest import call, held_hit, signed_in

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def answered_after(row, seconds: float) -> None:
    """Say the answer to `row` came `seconds` after it was held (the link's own time, which
    the chain does not seal apart from its row; only this test's clock is moved)."""
    StatusTransition.objects.filter(invocation=row).update(
        at=row.created_at + timedelta(seconds=seconds)
    )


@pytest.fixture
def answered(world):
    """Four held calls: the owner approves two (after 10 s and 30 s) and rejects one (50 s);
    the co-GM approves one (4 s); a fifth still waits."""
    ids = {"campaign_id": world.campaign.pk}
    for how, by, seconds in (
        ("approve", world.owner, 10),
        ("approve", world.owner, 30),
        ("reject", world.owner, 50),
        ("approve", world.cogm, 4),
    ):
        row = held_hit(world, world.player)
        answer = invocation_approve if how == "approve" else invocation_reject
        answer(**ids, invocation_id=row.pk, user=by)
        answered_after(row, seconds)
        from campaigns.models import Creature

        Creature.objects.filter(pk=world.goblin.pk).update(hp=7)
    held_hit(world, world.player)
    Turn.objects.filter(campaign=world.campaign).update(status=Turn.Status.COMPLETED)
    return world


def test_per_approver_approve_rate_and_time_to_decide(answered, as_owner):
    body = as_owner.get("/api/analytics/approvals/").json()
    assert body == {
        "prompts": 5,
        "awaiting": 1,
        "expired": 0,
        "turns": 5,
        "prompts_per_turn": 1.0,
        "approvers": [
            {
                "approver": "cogm",
                "answered": 1,
                "approved": 1,
                "rejected": 0,
                "approve_rate": 1.0,
                "median_seconds": 4.0,
                "mean_seconds": 4.0,
            },
            {
                "approver": "owner",
                "answered": 3,
                "approved": 2,
                "rejected": 1,
                "approve_rate": 0.6667,
                "median_seconds": 30.0,
                "mean_seconds": 30.0,
            },
        ],
    }


def test_an_objection_counts_as_the_players_refusal(world, as_owner):
    from campaigns.models import Campaign

    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()
    row = call(
        world,
        "modify_creature",
        {"creature_id": world.hero.pk, "hp_delta": -3},
        turn=world.turn(world.owner),
    )
    invocation_object(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.player, reason="no"
    )
    (player,) = as_owner.get("/api/analytics/approvals/").json()["approvers"]
    assert (player["approver"], player["rejected"], player["approve_rate"]) == ("player", 1, 0.0)


def test_the_scope_is_the_tools_analytics_scope(answered):
    url = f"/api/analytics/approvals/?campaign={answered.campaign.pk}"
    assert client_for(answered.player).get(url).status_code == 403
    assert client_for(answered.outsider).get(url).status_code == 404
    assert client_for(answered.outsider).get("/api/analytics/approvals/").json()["prompts"] == 0
    later = (timezone.now() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    body = client_for(answered.owner).get(f"{url}&since={later}").json()
    assert (body["prompts"], body["approvers"]) == (0, [])


def test_the_admin_analytics_page_shows_it(answered, staff):
    html = signed_in(staff).get("/admin/audit/toolinvocation/analytics/").content.decode()
    assert "Approval fatigue" in html
    assert "5 prompts over 5 GM turns (1.00 per turn); 1 waiting, 0 expired" in html
    owner = "<td>owner</td><td>3</td><td>2</td><td>1</td><td>67%</td><td>30.0 s</td>"
    assert owner in html


@pytest.mark.django_db
def test_the_scripted_session_counts_what_the_doc_quotes():
    out = StringIO()
    call_command("approval_fatigue", stdout=out)
    printed = out.getvalue().strip()
    rows = {line.split()[0]: line.split()[1:4] for line in printed.splitlines()[2:-1]}
    assert rows == {
        "none": ["0", "0.00", "0"],
        "critical": ["16", "0.53", "14"],
        "critical_and_high": ["21", "0.70", "19"],
        "adaptive": ["16", "0.53", "14"],
        "watchful": ["7", "0.23", "5"],  # both misreads held, as under critical, at 7 prompts
    }
    assert printed in DOC.read_text()  # the doc quotes this very output


def test_the_session_refuses_a_database_with_campaigns(world):
    with pytest.raises(CommandError, match="scratch database"):
        call_command("approval_fatigue", stdout=StringIO())
