"""Sign-in, sign-up and sign-out pages: lockout after failed sign-ins, the sign-up rate limit,
and a sign-out that ends the session for the pages and the API."""

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client

from tests.conftest import make_user
from web.accounts import SignupRateThrottle


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


def sign_in(client: Client, password: str, username: str = "alice"):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_the_nth_failed_sign_in_shows_the_lockout_page(db, client: Client, settings):
    make_user("alice")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert b"Wrong username or password" in sign_in(client, "nope").content
    for password in ("nope", "pw-alice"):
        response = sign_in(client, password)
        assert response.status_code == 429
        assert response["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
        assert b"Too many failed sign-ins for this username from your address." in response.content
        assert b'role="alert"' in response.content
    assert client.get("/campaigns/").status_code == 302
    assert sign_in(Client(REMOTE_ADDR="10.0.0.9"), "pw-alice").status_code == 302


def test_signing_in_clears_the_failures(db, client: Client, settings):
    make_user("alice")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, "nope")
    assert sign_in(client, "pw-alice").status_code == 302
    client.post("/accounts/logout/")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, "nope").status_code == 200


def test_sign_ups_past_the_rate_get_a_429_page(db, client: Client):
    password = "a-long-dragon-phrase-41"
    for n in range(SignupRateThrottle().num_requests):
        fresh = Client()
        body = {"username": f"newbie{n}", "password1": password, "password2": password}
        assert fresh.post("/accounts/signup/", body).status_code == 302
    assert client.get("/accounts/signup/").status_code == 200
    body = {"username": "late", "password1": password, "password2": password}
    response = client.post("/accounts/signup/", body)
    assert response.status_code == 429
    assert b"Too many sign-ups from your address." in response.content
    assert 0 < int(response["Retry-After"]) <= 3600
    assert not User.objects.filter(username="late").exists()


def test_signing_out_ends_the_session_everywhere(db, client: Client):
    make_user("alice")
    sign_in(client, "pw-alice")
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert client.get("/api/campaigns/").status_code == 200
    client.post("/accounts/logout/")
    assert not Session.objects.filter(session_key=cookie).exists()
    replay = Client()
    replay.cookies[settings.SESSION_COOKIE_NAME] = cookie
    assert replay.get("/campaigns/").status_code == 302
    assert replay.get("/api/campaigns/").status_code == 401


def test_the_sign_up_rules_show_before_any_attempt(db, client: Client):
    html = client.get("/accounts/signup/").content.decode()
    assert "Up to 150 letters, digits and @ . + - _ only" in html
    assert "at least 8 characters" in html  # the password validators' own words
    assert "can’t be entirely numeric" in html
    assert html.index("at least 8 characters") < html.index('name="password1"')
    assert 'aria-describedby="id_password1_helptext"' in html
    assert 'id="id_password1_helptext"' in html


def test_a_refused_sign_up_keeps_what_was_typed(db, client: Client):
    response = client.post(
        "/accounts/signup/",
        {"username": "newbie", "password1": "a-long-dragon-phrase-41", "password2": "other"},
    )
    html = response.content.decode()
    assert "The two password fields didn’t match." in html
    assert 'name="username" value="newbie"' in html
    assert 'name="password1" value="a-long-dragon-phrase-41"' in html
    assert "no-store" in response["Cache-Control"]
