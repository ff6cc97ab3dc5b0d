"""Security events in the admin: read-only, filterable by kind, user, campaign and date."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from audit.models import SecurityEvent

CHANGELIST = reverse("admin:audit_securityevent_changelist")


@pytest.fixture
def recorded(world):
    make = SecurityEvent.objects.create
    rows = {
        "revert": make(kind="revert_denied", user=world.other, campaign=world.campaign),
        "socket": make(kind="websocket_denied", user=world.outsider, campaign=world.campaign),
        "tool": make(
            kind="tool_call_denied",
            user=world.other,
            campaign=world.foreign.campaign,
            detail={"message": "not yours"},
        ),
    }
    SecurityEvent.objects.filter(pk=rows["tool"].pk).update(
        created_at=timezone.now() - timedelta(days=40)
    )
    return rows


def listed(response):
    return {e.pk for e in response.context["cl"].result_list}


@pytest.mark.parametrize(
    ("param", "value", "expected"),
    [
        ("kind__exact", "revert_denied", {"revert"}),
        ("user__id__exact", "other", {"revert", "tool"}),
        ("campaign__id__exact", "foreign", {"tool"}),
    ],
)
def test_each_filter(staff_client, world, recorded, param, value, expected):
    values = {"other": world.other.pk, "foreign": world.foreign.campaign_id}
    response = staff_client.get(CHANGELIST, {param: values.get(value, value)})
    assert response.status_code == 200
    assert listed(response) == {recorded[name].pk for name in expected}


def test_date_filter(staff_client, recorded):
    since = (timezone.now() - timedelta(days=7)).isoformat()
    response = staff_client.get(CHANGELIST, {"created_at__gte": since})
    assert listed(response) == {recorded["revert"].pk, recorded["socket"].pk}


def test_detail_is_read_only_and_shows_the_detail_json(staff_client, recorded):
    event = recorded["tool"]
    url = reverse("admin:audit_securityevent_change", args=[event.pk])
    html = staff_client.get(url).content.decode()
    assert "&quot;message&quot;: &quot;not yours&quot;" in html
    assert staff_client.post(url, {"kind": "revert_denied"}).status_code == 403
    delete = reverse("admin:audit_securityevent_delete", args=[event.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    assert staff_client.get(reverse("admin:audit_securityevent_add")).status_code == 403
    assert SecurityEvent.objects.get(pk=event.pk).kind == "tool_call_denied"
