"""The admin index: what staff holding the revert permission find there."""

from django.urls import reverse


def test_staff_with_the_revert_permission_see_the_log_turns_and_campaigns(staff_client):
    response = staff_client.get(reverse("admin:index"))
    assert response.status_code == 200
    models = {
        (app["app_label"], model["object_name"]): model["perms"]
        for app in response.context["app_list"]
        for model in app["models"]
    }
    assert set(models) == {
        ("audit", "ToolInvocation"),
        ("audit", "SecurityEvent"),
        ("campaigns", "Campaign"),
        ("campaigns", "Turn"),
    }
    assert all(p["view"] and not (p["add"] or p["change"] or p["delete"]) for p in models.values())
