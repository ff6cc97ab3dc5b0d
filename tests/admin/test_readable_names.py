"""The admin names people and creatures, not ids (`Turn 10 by alice`, `Goblin: HP -9`), and its
pages do not grow a query per row to do it."""

import re

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.models import SecurityEvent
from audit.services import invocation_dispatch
from campaigns.models import Membership
from campaigns.services import membership_add
from tests.admin.conftest import CHANGELIST, call, change_url, move, revert_url
from tests.conftest import make_user

HIT = "Goblin: HP -5, +prone"


def turn_url(turn) -> str:
    return reverse("admin:campaigns_turn_change", args=[turn.pk])


def campaign_url(world) -> str:
    return reverse("admin:campaigns_campaign_change", args=[world.campaign.pk])


def test_titles_name_people(world):
    turn = world.turn(world.player)
    assert str(turn) == f"Turn {turn.pk} by player"
    membership = Membership.objects.get(campaign=world.campaign, user=world.other)
    assert str(membership) == "other in The Sunken Keep (player)"
    event = SecurityEvent.objects.create(kind="admin_denied", user=world.other)
    assert str(event) == "admin_denied by other"
    world.other.delete()
    assert str(SecurityEvent.objects.get()) == "admin_denied by a deleted user"


def test_a_calls_summary_names_the_creature_on_its_page_and_its_revert_page(
    staff_client, world, hit
):
    assert HIT in staff_client.get(change_url(hit)).content.decode()
    page = staff_client.get(revert_url(hit))
    assert HIT in page.content.decode()
    assert [item["summary"] for item in page.context["plan"]["invocations"]] == [HIT]
    assert page.context["summary"] == HIT


def test_the_turn_page_names_the_actor_and_the_creatures(staff_client, world):
    turn = world.turn(world.player)
    call(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -9}, turn=turn)
    html = staff_client.get(turn_url(turn)).content.decode()
    assert f"Turn {turn.pk} by player" in html
    assert "Goblin: HP -9" in html and not re.search(r"\bcreatures? \d", html)


def test_bulk_revert_names_the_creatures_of_each_campaign(staff_client, world, hit):
    elsewhere = invocation_dispatch(
        campaign=world.foreign.campaign,
        actor=world.outsider,
        tool_name="move_token",
        input={"creature_id": world.foreign.pk, "x": 1, "y": 1},
    )
    response = staff_client.post(
        CHANGELIST, {"action": "revert_selected", ACTION_CHECKBOX_NAME: [hit.pk, elsewhere.pk]}
    )
    summaries = {row.pk: summary for row, summary in response.context["rows"]}
    assert summaries == {hit.pk: HIT, elsewhere.pk: "move Stranger to 1,1"}


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_turn_page_reads_names_once_however_many_calls(staff_client, world):
    turn = world.turn(world.player)
    for x in range(2):
        move(world, x, turn=turn)
    few = queries(staff_client, turn_url(turn))
    for x in range(10):
        move(world, x, turn=turn)
    assert queries(staff_client, turn_url(turn)) == few


def test_the_campaign_page_names_members_without_a_query_each(staff_client, world):
    few = queries(staff_client, campaign_url(world))
    for i in range(5):
        membership_add(
            campaign=world.campaign, by=world.owner, username=make_user(f"extra{i}").username
        )
    html = staff_client.get(campaign_url(world)).content.decode()
    assert "extra4 in The Sunken Keep (player)" in html
    assert queries(staff_client, campaign_url(world)) == few


@pytest.mark.parametrize("changelist", ["campaigns_turn", "audit_securityevent"])
def test_changelists_show_compact_times(staff_client, world, changelist):
    world.turn(world.player)
    SecurityEvent.objects.create(kind="admin_denied", user=world.other)
    html = staff_client.get(reverse(f"admin:{changelist}_changelist")).content.decode()
    assert "a.m." not in html and "p.m." not in html
