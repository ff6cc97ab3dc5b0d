"""Every write the admin refuses leaves exactly one security event and changes nothing: Revert,
Undo turn, the bulk revert, approve and reject, and Django's own write views (change, add,
delete). A campaign the staff member may not see is `admin_denied` (the service does not record
its NotFound); a member without the right is the service's own kind; a write the admin's
permissions refuse is `admin_denied`."""

from typing import Any

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from audit.models import SecurityEvent, StatusTransition, ToolInvocation
from campaigns.models import ApprovalPolicyChange, Campaign, ChatMessage, Turn
from tests.admin.conftest import CHANGELIST, change_url, messages_of, revert_url
from tests.conftest import World, call, dump, held_hit, make_user, signed_in

IP = "10.0.0.9"
KIND = SecurityEvent.Kind


def staff_with(*codenames: str, name: str = "viewer") -> Client:
    """A staff account holding only these model permissions (no audit permission), signed in."""
    user = make_user(name, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return signed_in(user)


@pytest.fixture
def viewer(world: World) -> Client:
    """Staff who may read the log, turns and campaigns in the admin but plays at no table."""
    return staff_with("view_toolinvocation", "view_turn", "view_campaign")


@pytest.fixture
def member(world: World) -> Client:
    """A member of the campaign, staff with the same read rights, who may not revert others'
    calls nor approve any."""
    world.other.is_staff = True
    world.other.save()
    world.other.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_toolinvocation", "view_turn"])
    )
    return signed_in(world.other)


@pytest.fixture
def played(world: World) -> tuple[Turn, ToolInvocation]:
    turn = world.turn(world.player)
    hit = {"creature_id": world.goblin.pk, "hp_delta": -3}
    return turn, call(world, "modify_creature", hit, actor=world.player, turn=turn)


@pytest.fixture
def held(world: World) -> ToolInvocation:
    return held_hit(world, world.player)


def database(world: World) -> tuple[Any, ...]:
    """What a refused write must leave as it was: the world, the log and its statuses, the
    turns and their messages, the campaign row and its policy log."""
    return (
        dump(world.campaign),
        sorted(ToolInvocation.objects.values_list("pk", "status", "reverted_at")),
        StatusTransition.objects.count(),
        sorted(Turn.objects.values_list("pk", "status", "reverted_at")),
        sorted(ChatMessage.objects.values_list("pk", "reverted")),
        list(Campaign.objects.values_list("pk", "name", "approval_policy", "event_seq")),
        ApprovalPolicyChange.objects.count(),
    )


def the_event() -> tuple[str, str, Any, str, str | None]:
    """The one security event there must be: (kind, username, campaign, target, ip)."""
    event = SecurityEvent.objects.get()
    return (event.kind, event.user.get_username(), event.campaign, event.target, event.ip)


def post(client: Client, url: str, data: dict | None = None):
    return client.post(url, data or {}, REMOTE_ADDR=IP)


def bulk(client: Client, action: str, rows: list[ToolInvocation], **extra: str):
    selected = {"action": action, ACTION_CHECKBOX_NAME: [str(r.pk) for r in rows], **extra}
    return post(client, CHANGELIST, selected)


def undo_url(turn: Turn) -> str:
    return reverse("admin:campaigns_turn_undo", args=[turn.pk])


def test_revert_of_a_table_the_staff_member_does_not_police(world, viewer, played):
    _, hit = played
    before = database(world)
    response = post(viewer, revert_url(hit), {"reason": "I think so"})
    assert response.status_code == 302 and response.url == change_url(hit)
    assert messages_of(response)[0][0] == "error"
    assert the_event() == (KIND.ADMIN_DENIED, "viewer", world.campaign, str(hit.pk), IP)
    assert SecurityEvent.objects.get().detail == {
        "message": "Neither a member of this campaign nor audit staff: may not revert it here."
    }
    assert database(world) == before


def test_the_revert_page_itself_is_refused_and_recorded(world, viewer, played):
    _, hit = played
    before = database(world)
    response = viewer.get(revert_url(hit), REMOTE_ADDR=IP)
    assert response.status_code == 302 and response.url == change_url(hit)
    assert the_event() == (KIND.ADMIN_DENIED, "viewer", world.campaign, str(hit.pk), IP)
    assert database(world) == before


def test_undo_turn_of_a_table_the_staff_member_does_not_police(world, viewer, played):
    turn, _ = played
    before = database(world)
    response = post(viewer, undo_url(turn), {"reason": "mine"})
    assert response.status_code == 302
    assert the_event() == (KIND.ADMIN_DENIED, "viewer", world.campaign, f"turn:{turn.pk}", IP)
    assert database(world) == before


def test_the_bulk_revert_records_each_refused_row(world, viewer, played):
    _, hit = played
    before = database(world)
    response = bulk(viewer, "revert_selected", [hit], confirm="yes", reason="x")
    assert [level for level, _ in messages_of(response)] == ["error"]
    assert the_event() == (KIND.ADMIN_DENIED, "viewer", world.campaign, str(hit.pk), IP)
    assert database(world) == before


@pytest.mark.parametrize(
    ("action", "verb"), [("approve_selected", "approve"), ("reject_selected", "reject")]
)
def test_bulk_answers_of_a_table_the_staff_member_does_not_police(
    world, viewer, held, action, verb
):
    before = database(world)
    response = bulk(viewer, action, [held])
    assert [level for level, _ in messages_of(response)] == ["error"]
    assert the_event() == (KIND.ADMIN_DENIED, "viewer", world.campaign, str(held.pk), IP)
    assert SecurityEvent.objects.get().detail["message"].endswith(f"may not {verb} it here.")
    assert database(world) == before


def test_a_member_without_the_right_is_recorded_once_by_the_service(world, member, played, held):
    turn, hit = played
    before = database(world)
    refused = [
        (post(member, revert_url(hit), {"reason": "x"}), KIND.REVERT_DENIED, str(hit.pk)),
        (post(member, undo_url(turn), {"reason": "x"}), KIND.REVERT_DENIED, f"turn:{turn.pk}"),
        (
            bulk(member, "revert_selected", [hit], confirm="yes", reason="x"),
            KIND.REVERT_DENIED,
            str(hit.pk),
        ),
        (bulk(member, "approve_selected", [held]), KIND.APPROVAL_DENIED, str(held.pk)),
    ]
    events = list(SecurityEvent.objects.order_by("created_at", "pk"))
    assert [(e.kind, e.user, e.campaign, e.target, e.ip) for e in events] == [
        (kind, world.other, world.campaign, target, IP) for _, kind, target in refused
    ]
    assert all(messages_of(response)[0][0] == "error" for response, _, _ in refused)
    assert database(world) == before


def test_a_change_the_admins_permissions_refuse(world):
    clerk = staff_with("view_campaign", name="clerk")
    before = database(world)
    url = reverse("admin:campaigns_campaign_change", args=[world.campaign.pk])
    response = post(clerk, url, {"name": "Renamed", "approval_policy": "none"})
    assert response.status_code == 403
    target = f"campaign:{world.campaign.pk}"
    assert the_event() == (KIND.ADMIN_DENIED, "clerk", world.campaign, target, IP)
    assert SecurityEvent.objects.get().detail == {
        "message": "No admin permission to change this campaign."
    }
    assert database(world) == before


def test_the_read_only_log_refuses_change_add_and_delete_and_records_each(
    world, staff_client, played
):
    _, hit = played
    before = database(world)
    log = "admin:audit_toolinvocation"
    refused = [
        (reverse(f"{log}_change", args=[hit.pk]), f"toolinvocation:{hit.pk}", world.campaign),
        (reverse(f"{log}_delete", args=[hit.pk]), f"toolinvocation:{hit.pk}", world.campaign),
        (reverse(f"{log}_add"), "toolinvocation:new", None),
        (reverse("admin:campaigns_campaign_add"), "campaign:new", None),
    ]
    for url, _, _ in refused:
        assert post(staff_client, url, {"post": "yes", "status": "reverted"}).status_code == 403
    events = list(SecurityEvent.objects.order_by("created_at", "pk"))
    assert [(e.kind, e.user.get_username(), e.campaign, e.target, e.ip) for e in events] == [
        (KIND.ADMIN_DENIED, "staff", campaign, target, IP) for _, target, campaign in refused
    ]
    assert database(world) == before


def test_reading_a_page_the_admin_refuses_is_no_write_and_leaves_no_event(world, staff_client):
    url = reverse("admin:campaigns_campaign_delete", args=[world.campaign.pk])
    assert staff_client.get(url).status_code == 403
    assert not SecurityEvent.objects.exists()


def test_revert_without_any_right_to_the_log_is_403_and_recorded(world, played):
    _, hit = played
    before = database(world)
    response = post(staff_with(name="clerk"), revert_url(hit), {"reason": "x"})
    assert response.status_code == 403
    assert the_event() == (KIND.ADMIN_DENIED, "clerk", world.campaign, str(hit.pk), IP)
    assert database(world) == before


def test_an_object_id_longer_than_the_column_is_cut_to_fit(world, staff_client):
    url = reverse("admin:audit_toolinvocation_change", args=["x" * 300])
    assert post(staff_client, url).status_code == 403
    assert SecurityEvent.objects.get().target == ("toolinvocation:" + "x" * 300)[:100]
