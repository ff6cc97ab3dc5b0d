"""Sign-up, API tokens, and session authentication with CSRF."""

import secrets

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from campaigns.models import Campaign
from tests.conftest import make_user

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
