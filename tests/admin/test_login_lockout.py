"""The admin's sign-in is locked out after repeated failures, like the site's (django-axes)."""

from django.test import Client

from tests.conftest import make_user


def test_the_nth_failed_admin_sign_in_locks_the_username_out(db, settings):
    make_user("root", is_staff=True, is_superuser=True)
    client = Client()

    def sign_in(password: str):
        return client.post("/admin/login/?next=/admin/", {"username": "root", "password": password})

    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in("nope").status_code == 200
    for password in ("nope", "pw-root"):
        response = sign_in(password)
        assert response.status_code == 429
        assert b"Too many failed sign-ins for this username from your address." in response.content
        assert response["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    assert client.get("/admin/").status_code == 302
