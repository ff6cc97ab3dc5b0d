"""Bad input anywhere gets a 4xx JSON `detail`, never a 500, and changes nothing."""

import json

import pytest
from django.contrib.auth.models import User

from audit.models import SecurityEvent, ToolInvocation
from campaigns.models import Campaign, ChatMessage, Turn
from tests.api.conftest import campaign_url, client_for, dump

pytestmark = pytest.mark.django_db

RAW_BODIES = {
    "malformed JSON": b'{"name": ',
    "not UTF-8": b'{"name": "\xff\xfe"}',
    "a JSON list": b"[1, 2, 3]",
    "a bare string": b'"hello"',
    "NaN": b'{"name": NaN}',
    "Infinity": b'{"hp": Infinity}',
    "overflowing float": b'{"hp": 1e400, "input": {"x": 1e400}}',
    "huge integer": b'{"hp": 1' + b"0" * 400 + b"}",
    "endless digits": b'{"hp": 1' + b"0" * 5000 + b"}",
    "NUL character": b'{"name": "a\\u0000b", "input": {"k": "\\u0000"}}',
    "lone surrogate": b'{"name": "\\ud800", "input": {"\\udfff": 1}}',
    "deep nesting": b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "1 MB body": json.dumps({"name": "x" * 1_000_000}).encode(),
}

FIELD_BODIES = {
    "unknown field": {"bogus": 1},
    "wrong types": {
        "name": ["x"],
        "message": {"a": 1},
        "hp": "lots",
        "tool": 5,
        "cascade": "perhaps",
        "username": None,
    },
    "huge numbers": {"name": "Big", "kind": "monster", "hp": 10**30, "max_hp": 10**30},
    "negative numbers": {"name": "Neg", "kind": "monster", "hp": -5, "max_hp": -1, "x": -3},
    "empty": {},
}


def endpoints(world, turn, row):
    return {
        "register": "/api/auth/register/",
        "token": "/api/auth/token/",
        "campaigns": "/api/campaigns/",
        "members": campaign_url(world, "members/"),
        "creatures": campaign_url(world, "creatures/"),
        "resources": campaign_url(world, f"creatures/{world.hero.pk}/resources/"),
        "chapters": campaign_url(world, "chapters/"),
        "dungeons": campaign_url(world, "dungeons/"),
        "turns": campaign_url(world, "turns/"),
        "tool_calls": campaign_url(world, f"turns/{turn.pk}/tool-calls/"),
        "undo": campaign_url(world, f"turns/{turn.pk}/undo/"),
        "revert": campaign_url(world, f"invocations/{row.pk}/revert/"),
    }


def everything(world):
    """All that a request could change, across the tables the API writes."""
    return (
        dump(world.campaign),
        list(ToolInvocation.objects.order_by("sequence").values()),
        User.objects.count(),
        Campaign.objects.count(),
        Turn.objects.count(),
        ChatMessage.objects.count(),
        SecurityEvent.objects.count(),
    )


@pytest.fixture
def target(world, played):
    return endpoints(world, played.turn, played.rows[0])


def assert_refused(response, world, before):
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/json"
    assert isinstance(response.json()["detail"], str) and response.json()["detail"]
    assert everything(world) == before


@pytest.mark.parametrize("label", list(RAW_BODIES))
def test_raw_bad_bodies_are_refused_everywhere(world, target, label):
    client = client_for(world.owner)
    before = everything(world)
    for name, url in target.items():
        response = client.post(url, RAW_BODIES[label], content_type="application/json")
        assert_refused(response, world, before)
        assert response.status_code in (400, 413, 422), name


def test_a_1mb_body_is_413(world, target):
    response = client_for(world.owner).post(
        target["turns"], RAW_BODIES["1 MB body"], content_type="application/json"
    )
    assert response.status_code == 413
    assert response.json() == {"detail": "The request body is too large."}


@pytest.mark.parametrize("label", list(FIELD_BODIES))
def test_bad_fields_are_refused_everywhere(world, target, label):
    client = client_for(world.owner)
    before = everything(world)
    for name, url in target.items():
        if name in ("undo", "revert") and label in ("empty", "negative numbers", "huge numbers"):
            continue  # every field of a revert is optional: an empty body is a valid revert
        assert_refused(client.post(url, FIELD_BODIES[label], format="json"), world, before)


@pytest.mark.parametrize(
    "body",
    [
        {"cascade": "perhaps"},
        {"cascade": 1},
        {"cascade": "true"},
        {"reason": 5},
        {"reason": "x" * 5000},
        {"reason": "ok", "cascde": True},
    ],
)
def test_bad_revert_bodies_are_refused(world, target, body):
    before = everything(world)
    for name in ("undo", "revert"):
        response = client_for(world.owner).post(target[name], body, format="json")
        assert_refused(response, world, before)


def test_other_content_types_are_415(world, target):
    response = client_for(world.owner).post(
        target["campaigns"], "name=Form", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415
    assert response.json()["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/campaigns/not-a-uuid/",
        "/api/campaigns/00000000-0000-0000-0000-000000000000/state/",
        "/api/campaigns/{c}/turns/99999999999999999999999/undo-plan/",
        "/api/campaigns/{c}/invocations/00000000-0000-0000-0000-000000000000/",
        "/api/campaigns/{c}/creatures/{big}/resources/",
        "/api/nowhere/",
    ],
)
def test_unknown_paths_and_ids_are_json_404(world, path):
    url = path.format(c=world.campaign.pk, big=2**80)
    client = client_for(world.owner)
    response = client.get(url) if "resources" not in url else client.post(url, {}, format="json")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}
