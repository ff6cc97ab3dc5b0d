"""The bulk action: newest first, one outcome per row, through the same service."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services import invocation_revert
from tests.admin.conftest import CHANGELIST, call, change_url, messages_of, move, revert_url
from tests.conftest import make_user
from web.admin import ToolInvocationAdmin


def select(client, rows, **extra):
    data = {"action": "revert_selected", ACTION_CHECKBOX_NAME: [str(r.pk) for r in rows]}
    return client.post(CHANGELIST, {**data, **extra})


def link(row):
    return f'<a href="{change_url(row)}">#{row.sequence} {row.tool_name}</a>'


@pytest.fixture
def mix(world, monkeypatch):
    """Committed, already reverted, failed, not revertible, and a pair where the later call
    depends on the earlier one (both selected), plus one whose dependent is not selected."""
    rows = {"committed": call(world, "move_token", {"creature_id": world.ally.pk, "x": 9, "y": 9})}
    rows["reverted"] = call(world, "set_scene", {"description": "Dusk."})
    invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=rows["reverted"].pk, user=world.owner
    )
    rows["failed"] = call(world, "consume_resource", {"creature_id": world.hero.pk})

    def broken_snapshot(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(registry.write_tool("write_memory"), "snapshot", broken_snapshot)
    rows["not_revertible"] = call(world, "write_memory", {"content": "The mayor lies."})
    monkeypatch.undo()
    hit = {"creature_id": world.goblin.pk, "hp_delta": -1}
    rows["earlier"], rows["later"] = (
        call(world, "modify_creature", hit),
        call(world, "modify_creature", hit),
    )
    rows["blocked"] = move(world, 3)
    rows["blocker"] = move(world, 4)  # not selected: it depends on "blocked"
    return rows


def test_the_action_first_asks_for_a_reason_and_changes_nothing(staff_client, mix):
    response = select(staff_client, [mix["committed"], mix["earlier"]])
    assert response.status_code == 200
    html = response.content.decode()
    assert "Revert the selected tool invocations?" in html and 'name="reason"' in html
    assert [row.pk for row, _ in response.context["rows"]] == [
        mix["earlier"].pk,
        mix["committed"].pk,
    ]
    assert ToolInvocation.objects.filter(status="reverted").count() == 1


def test_a_reason_is_required(staff_client, mix):
    response = select(staff_client, [mix["committed"]], confirm="yes", reason="")
    assert response.status_code == 200 and response.context["form"].errors["reason"]
    assert ToolInvocation.objects.get(pk=mix["committed"].pk).status == "committed"


def test_each_row_reports_its_outcome_newest_first(staff_client, staff, mix):
    chosen = [m for name, m in mix.items() if name != "blocker"]
    response = select(staff_client, chosen, confirm="yes", reason="bad session")
    assert response.status_code == 302 and response.url == CHANGELIST
    cascade = f'<a href="{revert_url(mix["blocked"])}?cascade=1">Revert with cascade</a>'
    assert messages_of(response) == [
        (
            "error",
            f"{link(mix['blocked'])}: not reverted, later invocations depend on what it wrote: "
            f"{link(mix['blocker'])}. {cascade}",
        ),
        ("success", f"{link(mix['later'])}: reverted."),
        ("success", f"{link(mix['earlier'])}: reverted."),
        (
            "warning",
            f"{link(mix['not_revertible'])}: skipped, no snapshot was captured, so it cannot be "
            "reverted faithfully (not_revertible).",
        ),
        (
            "warning",
            f"{link(mix['failed'])}: skipped, it never committed, so there is nothing to revert "
            "(not_committed).",
        ),
        (
            "warning",
            f"{link(mix['reverted'])}: skipped, it was already reverted (already_reverted).",
        ),
        ("success", f"{link(mix['committed'])}: reverted."),
    ]
    status = dict(ToolInvocation.objects.values_list("pk", "status"))
    assert [status[mix[n].pk] for n in ("committed", "earlier", "later")] == ["reverted"] * 3
    assert status[mix["blocked"].pk] == status[mix["blocker"].pk] == "committed"
    assert status[mix["failed"].pk] == "failed"
    assert set(
        ToolInvocation.objects.filter(status="reverted").values_list("reverted_by", flat=True)
    ) == {staff.pk, mix["reverted"].user_id}


def test_staff_without_the_revert_permission_reverts_nothing(client, mix):
    viewer = make_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_toolinvocation"))
    client.force_login(viewer)
    response = select(client, [mix["committed"], mix["later"]], confirm="yes", reason="x")
    assert [level for level, _ in messages_of(response)] == ["error", "error"]
    assert ToolInvocation.objects.filter(status="reverted").count() == 1


def test_more_rows_than_the_bulk_limit_are_refused(staff_client, world, monkeypatch):
    monkeypatch.setattr(ToolInvocationAdmin, "bulk_limit", 2)
    rows = [move(world, x) for x in range(3)]
    response = select(staff_client, rows, confirm="yes", reason="all of it")
    assert messages_of(response) == [("error", "Select at most 2 invocations to revert.")]
    assert not ToolInvocation.objects.filter(status="reverted").exists()
