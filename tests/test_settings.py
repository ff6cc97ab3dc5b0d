"""Production settings: deploy checks clean, and no start without a real secret key."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return python("manage.py", *args, **env)


def python(
    *args: str, drop: tuple[str, ...] = ("DJANGO_",), **env: str
) -> subprocess.CompletedProcess:
    """`python *args` under the project's settings with `env`, and without the suite's own
    variables whose names start with one of `drop`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_production_settings():
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        AUDIT_CHAIN_KEY=secrets.token_urlsafe(48),
    )
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_refuses_to_start_without_a_real_secret_key():
    result = manage("check", DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_production_refuses_to_start_without_a_real_audit_chain_key():
    """The log's key never defaults in production, and is not the secret key reused."""
    secret = secrets.token_urlsafe(64)
    for key in ("", "short", secret):
        result = manage("check", DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secret, AUDIT_CHAIN_KEY=key)
        assert result.returncode != 0, key
        assert "AUDIT_CHAIN_KEY must be set" in result.stderr


def test_assets_are_served_by_the_app_with_debug_off(client, settings):
    settings.DEBUG = False
    for path in (
        "/static/js/table.js",
        "/static/css/table.css",
        "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert b"".join(response.streaming_content), path


# Loggers whose lines `make run` shows: Django's request and access lines, Daphne's, the task
# worker's, the project's own.
SHOWN_LOGGERS = (
    "django.request",
    "django.channels.server",
    "daphne.server",
    "django_tasks_db",
    "campaigns.realtime",
)


def test_each_log_line_is_printed_once():
    """Every record reaches one handler: `make run` printed each request line twice while the
    `django` logger kept Django's own console handler beside the root's."""
    lines = "; ".join(
        f"logging.getLogger({name!r}).{level}('{level} from {name}')"
        for name in SHOWN_LOGGERS
        for level in ("info", "warning")
    )
    result = python("-c", f"import logging, django; django.setup(); {lines}")
    assert result.returncode == 0, result.stderr
    printed = result.stderr.splitlines()
    for name in SHOWN_LOGGERS:
        assert printed.count(f"warning from {name}") == 1, result.stderr
    for name in ("django.channels.server", "daphne.server"):
        assert printed.count(f"info from {name}") == 1, result.stderr
