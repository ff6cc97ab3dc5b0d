"""The page's stylesheet and script are the app's own files, served by the app: no CDN, no
external fonts, no build step."""

import re
from pathlib import Path

import pytest
from channels.routing import get_default_application
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.test import Client

from tests.conftest import World, asgi_http


def test_the_page_references_only_local_assets(world: World, player_client: Client):
    html = player_client.get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert '<link rel="stylesheet" href="/static/css/table.css">' in html
    assert '<script type="module" src="/static/js/table.js"></script>' in html
    for url in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert url.startswith(("/", "#", "data:")), url
    assert "@import" not in html


SCRIPTS = sorted(
    str(path.relative_to(Path(finders.find("js")).parent))
    for path in Path(finders.find("js")).rglob("*.js")
)


@pytest.mark.parametrize("path", ["css/table.css", *SCRIPTS])
def test_assets_load_nothing_from_elsewhere(path: str):
    source = Path(finders.find(path)).read_text(encoding="utf-8")
    assert not re.search(r"https?://|@import|url\(\s*['\"]?//", source)


@pytest.mark.parametrize("path", SCRIPTS)
def test_the_scripts_are_es_modules_importing_only_the_apps_own_files(path: str):
    """No build step: each module is served as written and imports its siblings by path."""
    source = Path(finders.find(path)).read_text(encoding="utf-8")
    for module in re.findall(
        r'^(?:import|export) .*?from "([^"]+)";$|^import "([^"]+)";$', source, re.M
    ):
        target = next(name for name in module if name)
        assert target.startswith("./"), target
        assert finders.find(str(Path(path).parent / target)), target


def test_the_page_loads_one_entry_module_that_opens_the_live_connection():
    entry = Path(finders.find("js/table.js")).read_text(encoding="utf-8")
    socket = Path(finders.find("js/table/socket.js")).read_text(encoding="utf-8")
    assert 'import { connect } from "./table/socket.js";' in entry
    assert "new WebSocket(" in socket


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/static/js/table.js", "javascript"), ("/static/css/table.css", "text/css")],
)
async def test_the_asgi_app_serves_the_assets(path: str, content_type: str):
    app = ASGIStaticFilesHandler(get_default_application())
    status, headers, body = await asgi_http(app, "GET", path)
    assert status == 200
    assert content_type in dict(headers)[b"Content-Type"].decode()
    assert len(body) > 1000
