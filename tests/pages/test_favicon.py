"""The app's own favicon: served by the app, linked from the site's pages and the admin's."""

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from tests.conftest import World

LINKS = (
    '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">',
    '<link rel="icon" href="/static/favicon.png" type="image/png" sizes="32x32">',
)


def assert_links_the_favicon(html: str) -> None:
    for link in LINKS:
        assert link in html
    assert 'href="data:,"' not in html


@pytest.mark.django_db
def test_the_sign_in_page_and_the_campaign_page_link_the_favicon(
    world: World, client: Client, player_client: Client
):
    assert_links_the_favicon(client.get("/accounts/login/").content.decode())
    page = player_client.get(f"/campaigns/{world.campaign.pk}/")
    assert_links_the_favicon(page.content.decode())


@pytest.mark.django_db
def test_the_admin_pages_link_the_favicon(client: Client, staff):
    assert_links_the_favicon(client.get("/admin/login/").content.decode())
    client.force_login(staff)
    assert_links_the_favicon(client.get("/admin/audit/toolinvocation/").content.decode())


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/static/favicon.svg", "image/svg+xml"), ("/static/favicon.png", "image/png")],
)
def test_the_app_serves_the_favicon(client: Client, path: str, content_type: str):
    response = client.get(path)
    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)
    body = b"".join(response.streaming_content)
    assert body == Path(finders.find(path.removeprefix("/static/"))).read_bytes()


def test_favicon_ico_leads_to_the_png(client: Client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == "/static/favicon.png"


def test_the_icon_loads_nothing_from_elsewhere():
    source = Path(finders.find("favicon.svg")).read_text(encoding="utf-8")
    assert not re.search(r"(?:href|src)=|url\(", source)
