"""`manage.py seed_demo`: a living table, printed logins that work, and no duplicates."""

import io
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import RequestFactory
from django.urls import reverse

from campaigns.models import Campaign, Creature, InventoryItem, Membership, Resource
from campaigns.selectors import campaign_state
from tests.processes import database_environment

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def development(settings):
    """Tests run with DEBUG off; the demo belongs to a development server."""
    settings.DEBUG = True


def seed(**options) -> str:
    out = io.StringIO()
    call_command("seed_demo", stdout=out, **options)
    return out.getvalue()


def signs_in(username: str, password: str) -> bool:
    """As the sign-in page asks (django-axes needs the request)."""
    request = RequestFactory().post("/accounts/login/")
    return authenticate(request, username=username, password=password) is not None


def test_seeds_a_living_table_whose_printed_logins_work():
    output = seed()

    logins = re.findall(r"^  (\w+) +(\S+-at-the-keep) ", output, re.MULTILINE)
    assert [user for user, _ in logins] == ["gm", "alice", "bob", "carol", "staff"]
    for username, password in logins:
        assert signs_in(username, password)
    campaign = Campaign.objects.get(name="The Sunken Keep")
    assert f"/campaigns/{campaign.pk}/" in output
    state = campaign_state(campaign)
    assert {m["role"] for m in state["members"]} == {"owner", "player"}
    assert len(state["members"]) == 4
    pcs = Creature.objects.filter(campaign=campaign, kind="pc")
    assert {pc.controlled_by.username for pc in pcs} == {"alice", "bob", "carol"}
    for pc in pcs:
        assert Resource.objects.filter(creature=pc).exists()
        assert InventoryItem.objects.filter(creature=pc).exists()
    assert Creature.objects.filter(campaign=campaign, kind="monster").count() == 4
    assert [c["title"] for c in state["chapters"]][0] == "The Drowned Gate"
    assert state["campaign"]["current_chapter_id"] == state["chapters"][0]["id"]
    assert state["campaign"]["active_dungeon_id"] == state["dungeons"][0]["id"]
    assert state["campaign"]["scene"]


def test_running_twice_changes_nothing_and_prints_the_same_logins():
    first = seed()
    campaign = Campaign.objects.get()
    before = campaign_state(campaign)

    second = seed()

    assert Campaign.objects.count() == 1
    assert campaign_state(campaign) == before
    assert "Already seeded" in second
    assert first.splitlines()[1:] == second.splitlines()[1:]


def test_a_changed_demo_password_is_put_back():
    seed()
    alice = User.objects.get(username="alice")
    alice.set_password("something-else")
    alice.save()
    seed()
    assert signs_in("alice", "alice-at-the-keep")


def test_refuses_with_debug_off_unless_forced(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="published passwords"):
        seed()
    assert not Campaign.objects.exists()
    seed(force=True)
    assert Campaign.objects.count() == 1


def test_the_staff_login_reads_and_reverts_the_log_in_the_admin(client):
    output = seed()
    password = re.search(r"^  staff +(\S+) ", output, re.MULTILINE)[1]
    assert signs_in("staff", password)
    staff = User.objects.get(username="staff")
    assert staff.is_staff and not staff.is_superuser
    assert staff.has_perm("audit.revert_toolinvocation")
    assert not Membership.objects.filter(user=staff).exists()
    client.force_login(staff)
    for page in ("toolinvocation", "securityevent"):
        assert client.get(reverse(f"admin:audit_{page}_changelist")).status_code == 200
    turns = client.get(reverse("admin:campaigns_turn_changelist"))
    assert turns.status_code == 200


def test_debug_off_in_the_environment_refuses_without_touching_the_database():
    """DJANGO_DEBUG=0, as production runs: the command stops before it touches the database
    (the one named here does not exist: any statement would fail otherwise)."""
    server = database_environment()["DATABASE_URL"].rsplit("/", 1)[0]
    env = {
        **os.environ,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "s" * 60,
        "AUDIT_CHAIN_KEY": "c" * 40,
        "DATABASE_URL": f"{server}/never_{uuid.uuid4().hex}",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "seed_demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "refusing with DEBUG off" in done.stderr
