"""The admin's approval queue: the log filtered to calls awaiting approval, approve and reject
actions through the same service, one outcome per row, and the detail's preview and answer."""

from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission

from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from campaigns.models import Campaign, Creature
from tests.admin.conftest import CHANGELIST, call, change_url, listed, messages_of
from tests.conftest import signed_in

Status = ToolInvocation.Status


def held(world, creature, hp_delta=-5):
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()
    row = call(
        world,
        "modify_creature",
        {"creature_id": creature.pk, "hp_delta": hp_delta},
        actor=world.player,
        turn=world.turn(world.player),
        source=InvocationOrigin.GM,
    )
    assert row.status == Status.AWAITING_APPROVAL
    return row


def act(client, action, rows):
    data = {"action": action, ACTION_CHECKBOX_NAME: [str(r.pk) for r in rows]}
    return client.post(CHANGELIST, data, follow=True)


def test_the_queue_lists_only_what_waits(staff_client, world):
    waiting = held(world, world.goblin)
    call(world, "move_token", {"creature_id": world.hero.pk, "x": 2, "y": 2})
    response = staff_client.get(CHANGELIST + "?status__exact=awaiting_approval")
    assert listed(response) == {waiting.pk}


def test_approve_and_reject_report_each_row(staff_client, world):
    first, second = held(world, world.goblin), held(world, world.orc, -3)
    response = act(staff_client, "approve_selected", [first, second])
    texts = [text for _, text in messages_of(response)]
    assert len(texts) == 2 and all("approved; it ran as" in t for t in texts)
    assert Creature.objects.get(pk=world.goblin.pk).hp == 2
    assert Creature.objects.get(pk=world.orc.pk).hp == 12
    again = act(staff_client, "reject_selected", [first])
    [(level, text)] = messages_of(again)
    assert level == "warning" and "not rejected" in text and "pending" in text


def test_a_member_without_the_right_is_denied_per_row_and_recorded(world):
    row = held(world, world.goblin)
    world.other.is_staff = True
    world.other.save()
    client = signed_in(world.other)
    world.other.user_permissions.add(Permission.objects.get(codename="view_toolinvocation"))
    response = act(client, "approve_selected", [row])
    [(level, text)] = messages_of(response)
    assert level == "error" and "may not answer" in text
    assert SecurityEvent.objects.get().kind == SecurityEvent.Kind.APPROVAL_DENIED
    row.refresh_from_db()
    assert row.status == Status.AWAITING_APPROVAL


def test_the_detail_shows_the_preview_and_who_answered(staff_client, world):
    row = held(world, world.goblin)
    html = staff_client.get(change_url(row)).content.decode()
    assert "critical tool" in html and "waiting" in html
    act(staff_client, "reject_selected", [row])
    html = staff_client.get(change_url(row)).content.decode()
    assert "rejected by staff" in html
