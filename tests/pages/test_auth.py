"""Sign-in, sign-up and sign-out pages."""

from django.contrib.auth.models import User
from django.test import Client

from tests.conftest import make_user


def test_login_page_renders_a_sign_in_form(client: Client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b'name="username"' in response.content
    assert b'name="password"' in response.content
    assert b'href="/accounts/signup/"' in response.content


def test_signing_in_leads_to_the_campaign_list(db, client: Client):
    make_user("alice")
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302
    assert response["Location"] == "/campaigns/"


def test_wrong_password_is_refused_with_a_message(db, client: Client):
    make_user("alice")
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"Wrong username or password" in response.content


def test_sign_up_creates_a_user_and_signs_them_in(db, client: Client):
    password = "a-long-dragon-phrase-41"
    response = client.post(
        "/accounts/signup/",
        {"username": "newbie", "password1": password, "password2": password},
    )
    assert response.status_code == 302
    assert response["Location"] == "/campaigns/"
    user = User.objects.get(username="newbie")
    assert user.check_password(password)
    page = client.get("/campaigns/")
    assert page.status_code == 200
    assert page.context["user"] == user


def test_sign_up_refuses_mismatched_passwords(db, client: Client):
    response = client.post(
        "/accounts/signup/",
        {"username": "newbie", "password1": "a-long-dragon-phrase-41", "password2": "other"},
    )
    assert response.status_code == 200
    assert b'role="alert"' in response.content
    assert not User.objects.filter(username="newbie").exists()


def test_signed_in_users_skip_the_sign_up_page(db, client: Client):
    client.force_login(make_user("alice"))
    response = client.get("/accounts/signup/")
    assert response.status_code == 302
    assert response["Location"] == "/campaigns/"


def test_signing_out_ends_the_session(db, client: Client):
    client.force_login(make_user("alice"))
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    assert client.get("/campaigns/").status_code == 302
