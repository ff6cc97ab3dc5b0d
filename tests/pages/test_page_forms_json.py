"""Every page form answers the page's script (`Accept: application/json`, as
`static/js/table/http.js` and `setup.js` send it) as the API answers: each error is JSON
`{"detail"}` with the API's status — 404 for a stranger, 403 (and one security event) for a
member without the right, 400 or 422 for bad input, 401 signed out, 503 in an outage — and
people posting the plain form still get pages."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.models import SecurityEvent, ToolInvocation
from campaigns import services
from campaigns.models import ApprovalPolicyChange, Campaign, Invite, Membership, Turn
from core.faults import RETRY_AFTER_SECONDS, UNAVAILABLE_DETAIL
from tests.conftest import World, dump, make_user, signed_in
from tests.infra.faults import database_drops_at

JSON = {"HTTP_ACCEPT": "application/json"}
IP = "10.0.0.5"


@pytest.fixture
def invite(world: World) -> Invite:
    made, _ = services.invite_create(
        campaign=world.campaign,
        by=world.owner,
        expires_in=timedelta(hours=1),
        max_uses=None,
    )
    return made


@dataclass(frozen=True)
class PageForm:
    tail: str  # its path under the campaign's
    fields: dict  # what its owner may post
    refused: dict  # an input the API refuses (digits other than ASCII among them) ...
    status: int  # ... with this status
    detail: str  # ... and a `detail` that begins so
    refused_tail: str = ""  # where that input goes, if not to `tail`


def forms(world: World, invite: Invite) -> dict[str, PageForm]:
    goblin, hero = str(world.goblin.pk), str(world.hero.pk)
    rat = {"name": "Rat", "kind": "monster", "hp": "3", "max_hp": "4"}
    rage = {"creature_id": hero, "name": "rage", "current": "1", "maximum": "2"}
    return {
        "members": PageForm("members/", {"username": "outsider"}, {"username": "x"}, 404, "No"),
        "creatures": PageForm("creatures/", rat, {**rat, "hp": "５"}, 400, "hp: Must be an"),
        "resources": PageForm("resources/", rage, {**rage, "current": "5"}, 422, ""),
        "chapters": PageForm("chapters/", {"title": "E"}, {}, 400, "title: This field is"),
        "dungeons": PageForm("dungeons/", {"name": "S"}, {"name": "x" * 300}, 400, "name: "),
        "invites": PageForm("invites/", {}, {"expires_in_hours": "٧٢"}, 400, "expires_in_"),
        "revoke": PageForm(
            f"invites/{invite.pk}/revoke/", {}, {}, 404, "No such invite.", "invites/999999/revoke/"
        ),
        "hand": PageForm(
            "hand/",
            {"tool": "set_scene", "description": "Dusk."},
            {"tool": "modify_creature", "creature_id": goblin, "hp_delta": "-５"},
            422,
            "Invalid input:",
        ),
        "policy": PageForm(
            "policy/",
            {"approval_policy": "none"},
            {"approval_policy": "x"},
            400,
            'approval_policy: "x" is not a valid choice.',
        ),
    }


FORMS = ["members", "creatures", "resources", "chapters", "dungeons", "invites", "revoke"]
FORMS += ["hand", "policy"]


def form(world: World, invite: Invite, name: str) -> tuple[str, PageForm]:
    """The form's URL, and its row of `forms`."""
    row = forms(world, invite)[name]
    return f"/campaigns/{world.campaign.pk}/{row.tail}", row


def database(world: World) -> tuple[Any, ...]:
    """What a refused form must leave as it was."""
    return (
        dump(world.campaign),
        sorted(Membership.objects.values_list("campaign_id", "user_id", "role")),
        sorted(Invite.objects.values_list("pk", "revoked_at", "uses")),
        ToolInvocation.objects.count(),
        Turn.objects.count(),
        list(Campaign.objects.values_list("pk", "approval_policy")),
        ApprovalPolicyChange.objects.count(),
    )


def assert_json(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"]
    return body


@pytest.mark.parametrize("name", FORMS)
def test_a_stranger_gets_the_apis_404(world: World, invite: Invite, name: str):
    url, row = form(world, invite, name)
    before = database(world)
    body = assert_json(signed_in(world.outsider).post(url, row.fields, **JSON), 404)
    assert body == {"detail": "Not found."}  # what the API tells a stranger
    assert database(world) == before and not SecurityEvent.objects.exists()


@pytest.mark.parametrize("name", FORMS)
def test_a_member_without_the_right_gets_the_apis_403_and_one_security_event(
    world: World, invite: Invite, name: str
):
    url, row = form(world, invite, name)
    before = database(world)
    body = assert_json(signed_in(world.player).post(url, row.fields, REMOTE_ADDR=IP, **JSON), 403)
    event = SecurityEvent.objects.get()
    assert (event.user, event.campaign, event.ip) == (world.player, world.campaign, IP)
    assert event.detail == {"message": body["detail"]}
    assert database(world) == before


@pytest.mark.parametrize("name", FORMS)
def test_bad_input_gets_the_apis_status_and_detail(world: World, invite: Invite, name: str):
    _, row = form(world, invite, name)
    url = f"/campaigns/{world.campaign.pk}/{row.refused_tail or row.tail}"
    before = database(world)
    body = assert_json(signed_in(world.owner).post(url, row.refused, **JSON), row.status)
    assert body["detail"].startswith(row.detail)
    assert database(world) == before


@pytest.mark.parametrize("name", FORMS)
def test_the_owners_post_goes_through(world: World, invite: Invite, name: str):
    """The sweep's fields are the right ones: the refusals above are about who and what."""
    url, row = form(world, invite, name)
    response = signed_in(world.owner).post(url, row.fields, **JSON)
    assert response.status_code in (201, 302), response.content


@pytest.mark.parametrize("name", FORMS)
def test_signed_out_gets_the_apis_401(world: World, invite: Invite, name: str):
    url, row = form(world, invite, name)
    response = Client().post(url, row.fields, **JSON)
    body = assert_json(response, 401)
    assert body == {"detail": "Authentication credentials were not provided."}
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("name", FORMS)
def test_an_outage_is_the_apis_503(world: World, invite: Invite, name: str):
    url, row = form(world, invite, name)
    client = signed_in(world.owner)
    with database_drops_at('FROM "campaigns_campaign"') as struck:
        response = client.post(url, row.fields, **JSON)
    assert struck
    assert assert_json(response, 503) == {"detail": UNAVAILABLE_DETAIL}
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)


@pytest.mark.parametrize("name", FORMS)
def test_a_get_is_the_apis_405_with_allow(world: World, invite: Invite, name: str):
    url, _ = form(world, invite, name)
    response = signed_in(world.owner).get(url, **JSON)
    assert assert_json(response, 405) == {"detail": "Method Not Allowed."}
    assert response["Allow"] == "POST"


def test_a_post_without_its_csrf_token_is_a_json_403(world: World):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.owner)
    url = f"/campaigns/{world.campaign.pk}/chapters/"
    assert_json(client.post(url, {"title": "Epilogue"}, **JSON), 403)


def test_invite_links_refuse_a_script_as_the_api_would(world: World, invite: Invite):
    client = signed_in(make_user("late"))
    unknown = assert_json(client.post("/invites/not-a-real-token/", **JSON), 404)
    assert unknown["detail"].startswith("This invite link does not exist.")
    _, token = services.invite_create(
        campaign=world.campaign,
        by=world.owner,
        expires_in=timedelta(hours=1),
        max_uses=None,
    )
    Invite.objects.update(expires_at=world.campaign.created_at)
    body = assert_json(client.post(f"/invites/{token}/", **JSON), 410)
    assert body["detail"].startswith("This invite link has expired.")
    assert not Membership.objects.filter(user__username="late").exists()


def test_a_campaign_and_a_sign_up_refused_are_the_apis_400(world: World):
    campaigns = Campaign.objects.count()
    created = assert_json(signed_in(world.player).post("/campaigns/", {"name": ""}, **JSON), 400)
    assert created["detail"] == "name: This field is required."
    assert created["errors"] == {"name": ["This field is required."]}
    signup = {"username": "newcomer", "password1": "a", "password2": "b"}
    body = assert_json(Client().post("/accounts/signup/", signup, **JSON), 400)
    assert body["detail"].startswith("password2: ")
    assert Campaign.objects.count() == campaigns
    assert not User.objects.filter(username="newcomer").exists()


def test_sign_ups_past_the_rate_are_the_apis_429(world: World, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"signup": "1/hour"},
    }
    fields = {"username": "one", "password1": "x7-long-enough-pw", "password2": "x7-long-enough-pw"}
    assert Client().post("/accounts/signup/", fields).status_code == 302
    response = Client().post("/accounts/signup/", {**fields, "username": "two"}, **JSON)
    assert assert_json(response, 429)["detail"].startswith("Too many sign-ups")
    assert response["Retry-After"]


def test_people_still_get_pages(world: World):
    """The policy form refused: a page with the API's `detail` and status, not text/plain;
    a stranger gets Django's 404 page as before."""
    url = f"/campaigns/{world.campaign.pk}/policy/"
    denied = signed_in(world.player).post(url, {"approval_policy": "none"})
    assert denied.status_code == 403 and denied["Content-Type"].startswith("text/html")
    assert "Only the campaign owner" in denied.content.decode()
    bad = signed_in(world.owner).post(url, {"approval_policy": "x"})
    assert bad.status_code == 400 and bad["Content-Type"].startswith("text/html")
    assert "approval_policy: &quot;x&quot; is not a valid choice." in bad.content.decode()
    stranger = signed_in(world.outsider).post(url, {"approval_policy": "none"})
    assert stranger.status_code == 404 and stranger["Content-Type"].startswith("text/html")
    signed_out = Client().post(url, {"approval_policy": "none"})
    assert signed_out.status_code == 302 and signed_out["Location"].startswith("/accounts/login/")
