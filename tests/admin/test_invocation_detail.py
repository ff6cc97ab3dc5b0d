"""The invocation detail page: readable JSON, the before → after diff, and no way to edit."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from ai_tools import registry
from audit.models import ToolInvocation
from tests.admin.conftest import CHANGELIST, call, change_url, move, revert_url
from tests.conftest import make_user


def test_detail_renders_input_result_snapshot_and_post_state_as_indented_json(
    staff_client, world, hit
):
    html = staff_client.get(change_url(hit)).content.decode()
    assert (
        '<pre class="audit-json">{\n  &quot;add_conditions&quot;: [\n    &quot;prone&quot;' in html
    )
    entity = f"creature:{world.goblin.pk}/vitals"
    assert f"&quot;{entity}&quot;: {{\n" in html  # snapshot and post-state, indented
    assert html.count('<pre class="audit-json">') == 6
    assert "HP -5, +prone" in html  # the tool's own summary
    assert 'style="background:#ba2121">critical</span>' in html


def test_detail_shows_the_before_and_after_of_each_written_field(staff_client, world, hit):
    html = staff_client.get(change_url(hit)).content.decode()
    entity = f"creature:{world.goblin.pk}/vitals"
    assert f'<caption>{entity} <span class="audit-change">changed</span></caption>' in html
    assert '<td>hp</td>\n            <td class="audit-before">7</td>' in html
    assert '<td class="audit-after">2</td>' in html
    assert (
        '<td class="audit-before">[]</td>\n            <td class="audit-after">[&quot;prone&quot;]'
        in html
    )
    assert "<td>max_hp</td>" not in html  # unchanged fields are left out


def test_diff_of_a_created_entity_has_no_before(staff_client, world):
    spawn = call(world, "spawn_creature", {"name": "Bat", "kind": "monster", "hp": 3})
    html = staff_client.get(change_url(spawn)).content.decode()
    assert "created</span></caption>" in html
    assert (
        '<td class="audit-before"></td>\n            <td class="audit-after">&quot;Bat&quot;'
        in html
    )


def test_detail_of_a_failed_call_shows_its_error_and_no_revert_button(staff_client, world):
    failed = call(world, "consume_resource", {"creature_id": world.hero.pk})
    html = staff_client.get(change_url(failed)).content.decode()
    assert "Invalid input" in html and "The call wrote nothing." in html
    assert revert_url(failed) not in html


def test_revert_button_shows_for_a_committed_call_to_those_who_may_revert(
    staff_client, client, world, hit
):
    assert revert_url(hit) in staff_client.get(change_url(hit)).content.decode()
    viewer = make_user("viewer", is_staff=True)
    viewer.user_permissions.add(_perm("view_toolinvocation"))
    client.force_login(viewer)
    response = client.get(change_url(hit))
    assert response.status_code == 200 and revert_url(hit) not in response.content.decode()


def _perm(codename):
    from django.contrib.auth.models import Permission

    return Permission.objects.get(codename=codename)


@pytest.fixture
def superuser_client(client, db):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


def test_nobody_can_add_change_or_delete_a_row_not_even_a_superuser(superuser_client, world):
    row = move(world, 4)
    before = ToolInvocation.objects.filter(pk=row.pk).values().get()
    add = reverse("admin:audit_toolinvocation_add")
    delete = reverse("admin:audit_toolinvocation_delete", args=[row.pk])
    forged = {"tool_name": "set_scene", "status": "reverted", "input": "{}", "sequence": 9}
    assert superuser_client.get(add).status_code == 403
    assert superuser_client.post(add, forged).status_code == 403
    assert superuser_client.post(change_url(row), forged).status_code == 403
    assert superuser_client.get(delete).status_code == 403
    assert superuser_client.post(delete, {"post": "yes"}).status_code == 403
    assert ToolInvocation.objects.filter(pk=row.pk).values().get() == before
    assert ToolInvocation.objects.count() == 1


def test_the_detail_page_is_view_only(superuser_client, world):
    html = superuser_client.get(change_url(move(world, 4))).content.decode()
    assert "View tool invocation" in html
    assert 'name="_save"' not in html and "deletelink" not in html
    assert reverse("admin:audit_toolinvocation_add") not in html


def test_the_delete_action_is_not_offered_and_cannot_be_forced(superuser_client, world):
    row = move(world, 4)
    response = superuser_client.get(CHANGELIST)
    actions = dict(response.context["action_form"].fields["action"].choices)
    assert "delete_selected" not in actions and "revert_selected" in actions
    forced = superuser_client.post(
        CHANGELIST, {"action": "delete_selected", ACTION_CHECKBOX_NAME: [row.pk], "post": "yes"}
    )
    assert forced.status_code in (200, 302)
    assert ToolInvocation.objects.filter(pk=row.pk, status="committed").exists()


def test_every_tool_name_in_the_log_has_a_summary_on_its_page(staff_client, world):
    row = call(world, "set_scene", {"description": "Rain on stone."})
    html = staff_client.get(change_url(row)).content.decode()
    assert registry.write_tool("set_scene").summarize(row.input) in html
