"""Reverting one invocation from its detail page: the service, the policy and the broadcast."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from audit.models import ToolInvocation
from campaigns.models import Creature
from tests.admin.conftest import call, change_url, messages_of, move, revert_url
from tests.conftest import dump, make_user, recorded_denial


def test_confirmation_page_shows_the_plan_and_asks_for_a_reason(staff_client, world, hit):
    response = staff_client.get(revert_url(hit))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Revert #1 modify_creature?" in html and "HP -5, +prone" in html
    assert '<textarea name="reason"' in html and "csrfmiddlewaretoken" in html
    diff = {(d["field"], d["before"], d["after"]) for d in response.context["plan"]["diff"]}
    assert ("hp", "7", "2") in diff
    assert ToolInvocation.objects.get(pk=hit.pk).status == "committed"


def test_revert_restores_state_and_records_who_and_why(
    staff_client, staff, world, events, django_capture_on_commit_callbacks
):
    before = dump(world.campaign)
    hit = call(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5})
    events.clear()
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(revert_url(hit), {"reason": "hit the wrong goblin"})
    assert response.status_code == 302 and response.url == change_url(hit)
    hit.refresh_from_db()
    assert (hit.status, hit.reverted_by, hit.revert_reason) == (
        "reverted",
        staff,
        "hit the wrong goblin",
    )
    assert dump(world.campaign) == before
    assert [(e["type"], e["source"], e["invocation"]) for e in events] == [
        ("invocation_reverted", "system", str(hit.pk))
    ]
    assert events[0]["data"]["reason"] == "hit the wrong goblin"
    assert messages_of(response) == [
        ("success", f'<a href="{change_url(hit)}">#1 modify_creature</a>: reverted.')
    ]


def test_a_reason_is_required(staff_client, hit):
    response = staff_client.post(revert_url(hit), {"reason": ""})
    assert response.status_code == 200 and response.context["form"].errors["reason"]
    assert ToolInvocation.objects.get(pk=hit.pk).status == "committed"


def test_the_revert_needs_the_csrf_token(staff, hit):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    assert client.post(revert_url(hit), {"reason": "no token"}).status_code == 403
    assert ToolInvocation.objects.get(pk=hit.pk).status == "committed"


def test_a_second_revert_reports_already_reverted(staff_client, hit):
    staff_client.post(revert_url(hit), {"reason": "once"})
    response = staff_client.post(revert_url(hit), {"reason": "twice"})
    assert response.status_code == 302
    level, text = messages_of(response)[-1]
    assert level == "warning" and "skipped, it was already reverted (already_reverted)" in text
    assert ToolInvocation.objects.get(pk=hit.pk).revert_reason == "once"


def test_a_later_dependent_call_is_a_conflict_named_with_a_cascade_link(staff_client, world):
    first, later = move(world, 3), move(world, 5)
    response = staff_client.post(revert_url(first), {"reason": "oops"})
    assert response.status_code == 200  # the page again, with the conflict
    ((level, text),) = messages_of(response)
    assert level == "error" and "later invocations depend on what it wrote" in text
    assert f'<a href="{change_url(later)}">#2 move_token</a>' in text
    assert f'<a href="{revert_url(first)}?cascade=1">Revert with cascade</a>' in text
    (conflict,) = response.context["plan"]["conflicts"]
    assert change_url(later) in conflict
    assert ToolInvocation.objects.filter(status="committed").count() == 2


def test_cascade_reverts_the_later_calls_first(staff_client, world):
    before = dump(world.campaign)
    first, _ = move(world, 3), move(world, 5)
    plan = staff_client.get(revert_url(first) + "?cascade=1").context["plan"]
    assert len(plan["invocations"]) == 2 and plan["conflicts"] == []
    response = staff_client.post(revert_url(first), {"reason": "oops", "cascade": "on"})
    assert "reverted together with 1 later invocation(s)" in messages_of(response)[0][1]
    assert set(ToolInvocation.objects.values_list("status", flat=True)) == {"reverted"}
    assert dump(world.campaign) == before


@pytest.fixture
def viewer(db):
    """Staff who may read the log but holds no revert permission."""
    user = make_user("viewer", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_toolinvocation"))
    return user


def test_staff_without_the_revert_permission_cannot_revert(client, viewer, world, hit):
    client.force_login(viewer)
    assert client.get(change_url(hit)).status_code == 200
    response = client.post(revert_url(hit), {"reason": "I think so"})
    assert response.status_code == 302
    ((level, text),) = messages_of(response)
    assert level == "error" and "not reverted, you may not revert in this campaign" in text
    assert ToolInvocation.objects.get(pk=hit.pk).status == "committed"
    assert Creature.objects.get(pk=world.goblin.pk).hp == 2
    page = client.get(revert_url(hit))
    assert page.status_code == 302 and page.url == change_url(hit)


def test_a_member_without_the_right_is_refused_and_it_is_recorded(client, world, hit):
    world.other.is_staff = True
    world.other.save()
    world.other.user_permissions.add(Permission.objects.get(codename="view_toolinvocation"))
    client.force_login(world.other)
    response = client.post(revert_url(hit), {"reason": "mine now"}, REMOTE_ADDR="10.0.0.7")
    assert messages_of(response)[0][0] == "error"
    assert ToolInvocation.objects.get(pk=hit.pk).status == "committed"
    assert recorded_denial() == (
        "revert_denied",
        world.other,
        world.campaign,
        str(hit.pk),
        "10.0.0.7",
    )
