"""Sign-up, API tokens, and session authentication with CSRF; lockout after failed sign-ins,
the sign-up rate limit, token revocation and expiry."""

import json
import secrets
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.test import AsyncClient, Client
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import Campaign
from tests.conftest import make_user
from web.accounts import TOKEN_EXPIRED, SignupRateThrottle

pytestmark = pytest.mark.django_db


def test_register_then_token_then_an_authenticated_request():
    anonymous = APIClient()
    created = anonymous.post(
        "/api/auth/register/",
        {"username": "newcomer", "password": "a long passphrase 7"},
        format="json",
    )
    assert created.status_code == 201
    assert created.json()["username"] == "newcomer"
    issued = anonymous.post(
        "/api/auth/token/",
        {"username": "newcomer", "password": "a long passphrase 7"},
        format="json",
    )
    assert issued.status_code == 200
    token = issued.json()["token"]
    client = APIClient(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/campaigns/").json() == {"results": [], "next": None}


def test_the_same_token_is_returned_on_every_sign_in():
    make_user("ana")
    body = {"username": "ana", "password": "pw-ana"}
    first = APIClient().post("/api/auth/token/", body, format="json").json()["token"]
    second = APIClient().post("/api/auth/token/", body, format="json").json()["token"]
    assert first == second


@pytest.mark.parametrize(
    "body",
    [
        {"username": "ana", "password": "wrong"},
        {"username": "nobody", "password": "pw-ana"},
        {"username": "ana"},
        {"username": "ana", "password": "pw-ana", "remember": True},
    ],
)
def test_bad_credentials_get_400_with_a_detail(body):
    make_user("ana")
    response = APIClient().post("/api/auth/token/", body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"]


def test_an_inactive_user_gets_no_token():
    make_user("gone", is_active=False)
    response = APIClient().post(
        "/api/auth/token/", {"username": "gone", "password": "pw-gone"}, format="json"
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    "body,field",
    [
        ({"username": "taken", "password": "a long passphrase 7"}, "username"),
        ({"username": "fresh", "password": "123"}, "password"),
        ({"username": "bad name!", "password": "a long passphrase 7"}, "username"),
        ({"username": "fresh", "password": "a long passphrase 7", "is_staff": True}, "is_staff"),
    ],
)
def test_registration_refuses_taken_names_weak_passwords_and_extra_fields(body, field):
    make_user("taken")
    response = APIClient().post("/api/auth/register/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert response.json()["detail"].startswith(field)
    assert not User.objects.filter(username="fresh").exists()


def test_anonymous_requests_get_401_with_the_token_challenge():
    response = APIClient().get("/api/campaigns/")
    assert response.status_code == 401
    assert response.json() == {"detail": "Authentication credentials were not provided."}
    assert response["WWW-Authenticate"] == "Token"


def test_an_unknown_token_gets_401():
    response = APIClient(HTTP_AUTHORIZATION="Token " + "0" * 40).get("/api/campaigns/")
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."


def test_a_deactivated_users_token_gets_401_and_a_live_one_reads_its_user():
    user = make_user("retired")
    token = Token.objects.create(user=user)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/campaigns/").status_code == 200
    user.is_active = False
    user.save()
    response = client.get("/api/campaigns/")
    assert response.status_code == 401
    assert response.json()["detail"] == "User inactive or deleted."


def test_a_session_post_without_the_csrf_token_is_refused():
    user = make_user("browser")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/api/campaigns/", {"name": "Forged"}, content_type="application/json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not Campaign.objects.exists()


def test_a_session_post_with_the_csrf_token_is_accepted():
    user = make_user("browser")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    token = secrets.token_hex(16)  # what the campaign page's CSRF cookie holds
    client.cookies["csrftoken"] = token
    response = client.post(
        "/api/campaigns/",
        {"name": "Honest"},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 201
    assert Campaign.objects.get().owner == user


# Failed sign-ins: one username from one address is locked out (django-axes).


def ask_token(username: str, password: str, address: str = "10.0.0.1", **headers):
    return APIClient().post(
        "/api/auth/token/",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
        **headers,
    )


def fail_until_locked(settings, username: str = "ana", address: str = "10.0.0.1"):
    """The failure limit's worth of wrong passwords; every one before the last is a plain 400."""
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert ask_token(username, "wrong", address).status_code == 400
    return ask_token(username, "wrong", address)


def assert_locked_out(response, settings) -> None:
    assert response.status_code == 429
    assert response.json()["detail"].startswith("Too many failed sign-ins for this username")
    assert response["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))


def test_the_nth_failed_sign_in_locks_the_username_out_even_with_the_right_password(settings):
    make_user("ana")
    assert_locked_out(fail_until_locked(settings), settings)
    assert_locked_out(ask_token("ana", "pw-ana"), settings)
    assert not Token.objects.exists()


def test_a_lockout_spares_other_names_from_that_address_and_that_name_from_elsewhere(settings):
    make_user("ana")
    make_user("bob")
    fail_until_locked(settings, "ana", "10.0.0.1")
    assert ask_token("bob", "pw-bob", "10.0.0.1").status_code == 200
    assert ask_token("ana", "pw-ana", "10.0.0.2").status_code == 200
    assert ask_token("ana", "pw-ana", "10.0.0.1").status_code == 429


def test_a_forged_forwarded_for_header_does_not_escape_the_lockout(settings):
    make_user("ana")
    for n in range(settings.AXES_FAILURE_LIMIT):
        response = ask_token("ana", "wrong", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
    assert_locked_out(response, settings)


def test_a_successful_sign_in_clears_the_failures(settings):
    make_user("ana")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        ask_token("ana", "wrong")
    assert ask_token("ana", "pw-ana").status_code == 200
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert ask_token("ana", "wrong").status_code == 400


def test_the_lockout_ends_after_the_cooloff(settings):
    make_user("ana")
    fail_until_locked(settings)
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert ask_token("ana", "pw-ana").status_code == 200


# Sign-ups: rate-limited per address, one limiter for the API and the page.


def sign_up(username: str, address: str = "10.0.0.1", **headers):
    return APIClient().post(
        "/api/auth/register/",
        {"username": username, "password": "a long passphrase 7"},
        format="json",
        REMOTE_ADDR=address,
        **headers,
    )


def signup_limit() -> int:
    return SignupRateThrottle().num_requests


def test_sign_ups_past_the_rate_get_429_and_create_nobody():
    for n in range(signup_limit()):
        assert sign_up(f"user{n}").status_code == 201
    refused = sign_up("one-too-many", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert refused.status_code == 429
    assert refused.json()["detail"].startswith("Too many sign-ups from your address.")
    assert 0 < int(refused["Retry-After"]) <= 3600
    assert not User.objects.filter(username="one-too-many").exists()
    assert sign_up("from-elsewhere", "10.0.0.2").status_code == 201


def test_the_sign_up_page_and_the_api_share_one_limit():
    page = Client(REMOTE_ADDR="10.0.0.1")
    for n in range(signup_limit()):
        page.post("/accounts/signup/", {"username": f"page{n}"})
    assert sign_up("by-api").status_code == 429


# Tokens: revoked by their user, dead after TOKEN_TTL.


def issued_token(username: str = "ana") -> str:
    make_user(username)
    return ask_token(username, "pw-" + username).json()["token"]


def test_delete_revokes_the_callers_token():
    key = issued_token()
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.delete("/api/auth/token/")
    assert response.status_code == 204
    assert not Token.objects.filter(key=key).exists()
    assert client.get("/api/campaigns/").status_code == 401
    assert issued_token("bob") != key
    assert ask_token("ana", "pw-ana").json()["token"] != key


def test_delete_without_credentials_is_401():
    key = issued_token()
    assert APIClient().delete("/api/auth/token/").status_code == 401
    assert Token.objects.filter(key=key).exists()


def age_token(key: str, seconds: float) -> None:
    Token.objects.filter(key=key).update(created=timezone.now() - timedelta(seconds=seconds))


def test_a_token_works_until_its_ttl(settings):
    key = issued_token()
    age_token(key, settings.TOKEN_TTL - 60)
    assert APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/campaigns/").status_code == 200


def test_an_expired_token_gets_401_and_is_deleted(settings):
    key = issued_token()
    age_token(key, settings.TOKEN_TTL + 1)
    response = APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/campaigns/")
    assert response.status_code == 401
    assert response.json() == {"detail": TOKEN_EXPIRED}
    assert response["WWW-Authenticate"] == "Token"
    assert not Token.objects.filter(key=key).exists()


def test_a_client_still_sending_its_expired_token_signs_in_for_a_new_one(settings):
    key = issued_token()
    age_token(key, settings.TOKEN_TTL + 1)
    response = APIClient(HTTP_AUTHORIZATION=f"Token {key}").post(
        "/api/auth/token/", {"username": "ana", "password": "pw-ana"}, format="json"
    )
    assert response.status_code == 200
    fresh = response.json()["token"]
    assert fresh != key
    assert APIClient(HTTP_AUTHORIZATION=f"Token {fresh}").get("/api/campaigns/").status_code == 200


def test_the_lockout_answers_alike_through_the_asgi_handler_daphne_runs(settings):
    """Axes's middleware takes another path under ASGI (its async call)."""
    make_user("ana")
    post = async_to_sync(AsyncClient().post)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = post(
            "/api/auth/token/",
            {"username": "ana", "password": "wrong"},
            content_type="application/json",
        )
    assert_locked_out(response, settings)


def test_the_schema_documents_lockout_throttling_and_revoke():
    schema = json.loads(APIClient().get("/api/schema/?format=json").content)
    token = schema["paths"]["/api/auth/token/"]
    register = schema["paths"]["/api/auth/register/"]["post"]
    for operation in (token["post"], register):
        too_many = operation["responses"]["429"]
        assert too_many["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }
        assert too_many["headers"]["Retry-After"]["schema"] == {"type": "integer"}
    assert set(token["delete"]["responses"]) == {"204", "401"}


def test_the_sign_up_limit_counts_in_a_cache_every_process_shares():
    """A per-process cache would let each worker grant its own quota."""
    assert isinstance(caches["default"], RedisCache)
    assert SignupRateThrottle.cache is cache
