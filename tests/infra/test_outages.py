"""An outage of the database is not our bug nor the tool's: the API answers JSON 503 with
Retry-After, pages a plain 503 page, and the dispatch fails closed with no row blaming a tool."""

import pytest
from django.db import OperationalError
from django.http import HttpResponse
from django.test import Client
from django.urls import path

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services import invocation_dispatch
from campaigns.models import Campaign, Creature
from core.errors import AuditLogFailure
from core.faults import RETRY_AFTER_SECONDS, UNAVAILABLE_DETAIL
from tests.api.conftest import campaign_url, client_for, dump
from tests.conftest import World
from tests.infra.conftest import assert_json_503, hit_goblin
from tests.infra.faults import database_drops_at

CREATURE_WRITE = 'UPDATE "campaigns_creature"'


def test_an_outage_inside_a_tool_call_answers_503_and_blames_no_tool(world: World):
    before = dump(world.campaign)
    with database_drops_at(CREATURE_WRITE) as struck:
        response = hit_goblin(world)
    assert struck, "the fault must strike inside the tool's apply"
    assert_json_503(response)
    assert not ToolInvocation.objects.exists()
    assert dump(world.campaign) == before


def test_an_outage_while_taking_the_snapshot_fails_closed_too(world: World):
    with database_drops_at('FROM "campaigns_creature"') as struck:
        response = hit_goblin(world)
    assert struck
    assert_json_503(response)
    assert not ToolInvocation.objects.exists()
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7


def test_the_dispatch_raises_the_fail_closed_error_on_an_outage(world: World):
    with database_drops_at(CREATURE_WRITE), pytest.raises(AuditLogFailure) as caught:
        invocation_dispatch(
            campaign=world.campaign,
            actor=world.owner,
            tool_name="modify_creature",
            input={"creature_id": world.goblin.pk, "hp_delta": -3},
        )
    assert isinstance(caught.value.__cause__, OperationalError)
    assert caught.value.status_code == 503
    assert not ToolInvocation.objects.exists()


def test_a_genuine_tool_bug_is_still_a_failed_row(world: World, monkeypatch):
    tool = registry.write_tool("modify_creature")

    def broken_apply(ctx, data):
        return data["no_such_key"]

    monkeypatch.setattr(tool, "apply", broken_apply)
    response = hit_goblin(world)
    assert response.status_code == 422
    row = ToolInvocation.objects.get()
    assert row.status == "failed"
    assert row.error == "Internal error in tool modify_creature (KeyError); nothing was changed."


def test_an_audit_log_failure_tells_the_client_when_to_retry(world: World):
    with database_drops_at('INSERT INTO "audit_toolinvocation"'):
        response = hit_goblin(world)
    assert_json_503(response)
    assert not ToolInvocation.objects.exists()


def test_an_api_read_during_an_outage_is_a_json_503(world: World):
    with database_drops_at('FROM "campaigns_campaign"'):
        response = client_for(world.player).get(campaign_url(world, "state/"))
    assert_json_503(response)


def test_a_page_during_an_outage_is_a_plain_503_page(world: World, client):
    client.force_login(world.player)
    with database_drops_at("SELECT"):
        response = client.get(f"/campaigns/{world.campaign.pk}/")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert b"Temporarily unavailable" in response.content
    assert b"Traceback" not in response.content


def plain_view(request):
    """A view outside DRF that reads the database."""
    return HttpResponse(str(Campaign.objects.count()))


urlpatterns = [path("api/plain/", plain_view), path("plain/", plain_view)]


@pytest.mark.urls(__name__)
def test_an_api_path_outside_drf_answers_json_503_too(world: World, client):
    with database_drops_at('FROM "campaigns_campaign"'):
        response = client.get("/api/plain/")
    assert_json_503(response)


@pytest.mark.urls(__name__)
def test_other_errors_are_left_to_django(world: World, client):
    with (
        database_drops_at('FROM "campaigns_campaign"', raise_as=ValueError),
        pytest.raises(ValueError),
    ):
        client.get("/plain/")


class OutageBeforeEveryView:
    """A middleware that meets the outage before any view or view-level handler runs."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        Campaign.objects.count()
        return self.get_response(request)


@pytest.mark.parametrize("path", ["/campaigns/", "/api/campaigns/"])
def test_an_outage_outside_every_view_is_a_503_not_a_500(world: World, settings, path):
    settings.MIDDLEWARE = [f"{__name__}.OutageBeforeEveryView", *settings.MIDDLEWARE]
    client = Client(raise_request_exception=False)
    with database_drops_at('FROM "campaigns_campaign"') as struck:
        response = client.get(path)
    assert struck
    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    if path.startswith("/api/"):
        assert response.json() == {"detail": UNAVAILABLE_DETAIL}
    else:
        assert b"Temporarily unavailable" in response.content


def test_a_bug_outside_every_view_is_still_a_500(world: World, settings):
    settings.MIDDLEWARE = [f"{__name__}.OutageBeforeEveryView", *settings.MIDDLEWARE]
    client = Client(raise_request_exception=False)
    with database_drops_at('FROM "campaigns_campaign"', raise_as=ValueError):
        response = client.get("/campaigns/")
    assert response.status_code == 500
