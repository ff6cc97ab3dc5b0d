"""A campaign's approval timeout (docs/api.md#human-in-the-loop): visible in the API and on the
page, set by the owner alone (API and page form, one service), and a held call expires at its
deadline — when it was held plus the timeout as it stands now."""

from datetime import timedelta

import pytest
from django_tasks_db.models import DBTaskResult

from audit.models import SecurityEvent, ToolInvocation
from audit.services.approval import invocation_expire
from campaigns.models import Campaign
from tests.api.conftest import campaign_url, client_for
from tests.conftest import held_hit, run_due_tasks, signed_in

Status = ToolInvocation.Status
EXPIRY = "audit.tasks.expire_held_call"


def expiry_jobs(row) -> list:
    """When the ready expiry jobs of `row` are due, oldest first."""
    jobs = DBTaskResult.objects.filter(status="READY", task_path=EXPIRY)
    return sorted(j.run_after for j in jobs if j.args_kwargs["args"] == [str(row.pk)])


def test_a_new_campaign_takes_the_sites_timeout_and_says_so(world, settings, as_player):
    settings.APPROVAL_TIMEOUT = 1800
    assert as_player.get(campaign_url(world)).json()["approval_timeout"] == 1800
    page = signed_in(world.player).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert "Held calls expire after <strong>30 minutes</strong>" in page
    assert 'name="minutes"' not in page  # the form is the owner's


def test_the_owner_sets_it_and_a_held_call_expires_at_the_new_deadline(world, as_owner):
    response = as_owner.patch(campaign_url(world), {"approval_timeout": 120}, format="json")
    assert response.status_code == 200 and response.json()["approval_timeout"] == 120
    assert Campaign.objects.get(pk=world.campaign.pk).approval_timeout_seconds == 120
    row = held_hit(world, world.player)
    detail = as_owner.get(campaign_url(world, f"invocations/{row.pk}/")).json()
    assert detail["expires_at"] == (row.created_at + timedelta(seconds=120)).isoformat()
    assert expiry_jobs(row) == [row.created_at + timedelta(seconds=120)]


def test_shortening_it_brings_the_expiry_of_a_waiting_call_forward(world, as_owner):
    row = held_hit(world, world.player)  # the site's hour
    assert (
        as_owner.patch(campaign_url(world), {"approval_timeout": 60}, format="json").status_code
        == 200
    )
    assert expiry_jobs(row) == [
        row.created_at + timedelta(seconds=60),
        row.created_at + timedelta(seconds=3600),
    ]


def test_an_expiry_job_before_the_deadline_waits_for_it(world, settings):
    settings.APPROVAL_TIMEOUT = 0.001
    row = held_hit(world, world.player)
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_timeout_seconds=600)
    assert invocation_expire(invocation_id=row.pk).startswith("not due until")
    row.refresh_from_db()
    assert row.status == Status.AWAITING_APPROVAL
    assert expiry_jobs(row)[-1] == row.created_at + timedelta(seconds=600)
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_timeout_seconds=None)
    assert "expired" in run_due_tasks()
    row.refresh_from_db()
    assert row.status == Status.EXPIRED


@pytest.mark.parametrize(
    ("who", "code"), [("player", 403), ("cogm", 403), ("outsider", 404), ("anonymous", 401)]
)
def test_only_the_owner_sets_it(world, who, code):
    user = None if who == "anonymous" else getattr(world, who)
    response = client_for(user).patch(campaign_url(world), {"approval_timeout": 60}, format="json")
    assert response.status_code == code
    assert Campaign.objects.get(pk=world.campaign.pk).approval_timeout_seconds is None
    denied = list(SecurityEvent.objects.values_list("user_id", "campaign_id"))
    assert denied == ([(user.pk, world.campaign.pk)] if code == 403 else [])


@pytest.mark.parametrize("seconds", [59, 7 * 24 * 3600 + 1, "60", 1.5])
def test_a_timeout_out_of_bounds_is_a_400(world, as_owner, seconds):
    response = as_owner.patch(campaign_url(world), {"approval_timeout": seconds}, format="json")
    assert response.status_code == 400
    assert Campaign.objects.get(pk=world.campaign.pk).approval_timeout_seconds is None


def test_null_goes_back_to_the_sites_default(world, as_owner, settings):
    as_owner.patch(campaign_url(world), {"approval_timeout": 90}, format="json")
    body = as_owner.patch(campaign_url(world), {"approval_timeout": None}, format="json").json()
    assert body["approval_timeout"] == round(settings.APPROVAL_TIMEOUT)


def test_the_page_form_sets_it_in_minutes_for_the_owner_only(world):
    url = f"/campaigns/{world.campaign.pk}/approval-timeout/"
    owner = signed_in(world.owner)
    response = owner.post(url, {"minutes": "5"})
    assert response.status_code == 302
    assert Campaign.objects.get(pk=world.campaign.pk).approval_timeout_seconds == 300
    page = owner.get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert "Held calls expire after <strong>5 minutes</strong>" in page and 'value="5"' in page
    assert signed_in(world.player).post(url, {"minutes": "1"}).status_code == 403
    assert owner.post(url, {"minutes": "0"}).status_code == 400
    assert Campaign.objects.get(pk=world.campaign.pk).approval_timeout_seconds == 300
