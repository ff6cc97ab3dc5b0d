"""A real ASGI server for the browser tests.

pytest-django's `live_server` speaks WSGI only, and the table needs websockets, so the app runs
in Daphne, forked by Channels' `DaphneProcess` after the test database exists (the child
inherits the settings that point at it). A forked process cannot open SQLite's in-memory test
database, so when browser tests are collected the SQLite test database becomes a file.
"""

import os
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import SyncToAsync
from channels.routing import get_default_application
from daphne.testing import DaphneProcess
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.db import connections

from tests.conftest import World, build_world


def pytest_collection_finish(session: pytest.Session) -> None:
    if not any(item.get_closest_marker("browser") for item in session.items):
        return
    for alias in connections:
        settings_dict = connections[alias].settings_dict
        if settings_dict["ENGINE"].endswith("sqlite3") and not settings_dict["TEST"]["NAME"]:
            name = f"undoable-gm-browser-{os.getpid()}-{alias}.sqlite3"
            settings_dict["TEST"]["NAME"] = os.path.join(tempfile.gettempdir(), name)


def _application():
    return ASGIStaticFilesHandler(get_default_application())


@pytest.fixture
def asgi_server(transactional_db, settings) -> Iterator[str]:
    """The whole app (HTTP, websockets, static files) on a free localhost port, answering
    turns with the scripted GM whatever the environment says."""
    settings.GM_PROVIDER = "scripted"
    connections.close_all()  # the child must not share this process's database sockets
    process = DaphneProcess(host="127.0.0.1", get_application=_application)
    # Nor its thread for database work from async code: once a test here has used it, the
    # child would inherit an executor whose one thread it does not have, and every consumer's
    # database call (a websocket handshake) would wait forever. The child gets a fresh one.
    ours, SyncToAsync.single_thread_executor = (
        SyncToAsync.single_thread_executor,
        ThreadPoolExecutor(max_workers=1),
    )
    try:
        process.start()
    finally:
        SyncToAsync.single_thread_executor = ours
    try:
        if not process.ready.wait(timeout=30):
            error = "" if process.errors.empty() else process.errors.get_nowait()[1]
            raise RuntimeError(f"Daphne did not start.\n{error}")
        yield f"http://127.0.0.1:{process.port.value}"
    finally:
        process.terminate()
        process.join(timeout=10)


@pytest.fixture
def live_world(transactional_db) -> World:
    """The shared world, committed, so the server process sees it."""
    return build_world()
