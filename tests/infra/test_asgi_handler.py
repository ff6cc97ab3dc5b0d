"""HTTP through the ASGI app Daphne serves (config.asgi.application): the middleware chain and the
view run in the request's worker thread, which the event loop enters once per request, and every
middleware still does its part there (security headers, the CSRF cookie and check)."""

import asyncio
import os
import subprocess
import sys
import threading
from collections import Counter
from typing import Any

import pytest
from asgiref import sync
from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.http import HttpResponse

from config.asgi import OneHopASGIHandler, application
from tests.conftest import asgi_http


async def asgi_request(method: str, path: str, body: bytes = b"", headers: Any = ()) -> Any:
    return await asgi_http(application, method, path, body, headers)


@pytest.fixture
def crossings(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """How often code crosses between the event loop and a worker thread (each direction)."""
    counts: Counter = Counter()
    for name in ("SyncToAsync", "AsyncToSync"):
        cls = getattr(sync, name)
        original = cls.__call__

        def counted(self: Any, *args: Any, __name: str = name, __call: Any = original, **kw: Any):
            counts[__name] += 1
            return __call(self, *args, **kw)

        monkeypatch.setattr(cls, "__call__", counted)
    return counts


@pytest.mark.asyncio
async def test_the_event_loop_hands_a_request_over_once_and_takes_it_back_once(crossings: Counter):
    status, headers, content = await asgi_request("GET", "/accounts/login/")
    assert status == 200
    assert b"<form" in content
    # Into the chain, and (Django's handler) to close the response, which sends request_finished
    # and gives the database connection back. Django's own chain crossed 16 times here.
    assert crossings == Counter({"SyncToAsync": 2})


@pytest.mark.asyncio
async def test_every_middleware_still_runs_under_asgi():
    status, headers, _ = await asgi_request("GET", "/accounts/login/")
    named = {name.lower(): value for name, value in headers}
    assert named[b"x-frame-options"] == b"DENY"
    assert named[b"x-content-type-options"] == b"nosniff"
    assert b"csrftoken=" in b" ".join(v for n, v in headers if n.lower() == b"set-cookie")
    status, _, _ = await asgi_request(
        "POST",
        "/accounts/login/",
        body=b"username=a&password=b",
        headers=[(b"content-type", b"application/x-www-form-urlencoded")],
    )
    assert status == 403  # no CSRF token: refused before the view


def test_the_server_process_moves_its_startup_objects_out_of_the_collectors_reach():
    """A full collection otherwise walks every module, class and pattern the app loaded: a
    pause of ~130 ms on this machine in the thread that sends every websocket event."""
    probe = "import gc, config.asgi; print(gc.get_freeze_count())"
    frozen = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert int(frozen) > 100_000


def handler_whose_view_is(view: Any, monkeypatch: pytest.MonkeyPatch) -> OneHopASGIHandler:
    """The app's handler with `view(request)` in place of Django's whole chain."""
    monkeypatch.setattr(
        BaseHandler,
        "load_middleware",
        lambda self, is_async=False: setattr(self, "_middleware_chain", view),
    )
    return OneHopASGIHandler()


@pytest.mark.asyncio
async def test_requests_in_flight_together_run_side_by_side(monkeypatch: pytest.MonkeyPatch):
    """Two requests at once are served at once, each in a worker thread of its own (Django's
    handler gives each request its own thread-sensitive context): both reach the barrier,
    which breaks (failing the request) if the second had to wait for the first to finish. The
    Python of both still shares the process's one interpreter lock: what overlaps is one's
    waits (the database, Redis) with the other's work."""
    barrier = threading.Barrier(2, timeout=5)
    threads = []

    def view(request: Any) -> HttpResponse:
        threads.append(threading.get_ident())
        barrier.wait()
        return HttpResponse("together")

    app = handler_whose_view_is(view, monkeypatch)
    answers = await asyncio.gather(*(asgi_http(app, "GET", "/") for _ in range(2)))
    assert [(status, body) for status, _, body in answers] == [(200, b"together")] * 2
    assert len(set(threads)) == 2
