"""The Procfile's web server, its command line as written there (uvicorn and its flags), serving
the app on the test database: a client's address is the peer's whatever `X-Forwarded-For` says,
the websocket origin check holds, each request has its access line, and SIGTERM (what honcho
sends on Ctrl-C) with a socket open ends the process by itself, the socket closed and the
lifespan's shutdown run, before honcho's SIGKILL 5 s later."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from rest_framework.authtoken.models import Token

from tests.conftest import World
from tests.processes import ROOT, Feed, database_environment

START_DEADLINE = 60  # a busy 2-core machine importing Django
STOP_DEADLINE = 5  # honcho's SIGKILL after its SIGTERM


def web_line() -> str:
    line = next(x for x in (ROOT / "Procfile").read_text().splitlines() if x[:4] == "web:")
    return line[4:].strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).close()
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def wait_for(condition, deadline: float, what: str, log: Path) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"{what} within {deadline} s; output:\n{log.read_text(errors='replace')}")


@pytest.fixture
def procfile_web(transactional_db, tmp_path) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """The Procfile's `web:` command, run by a shell as honcho runs it, on a free port, on the
    test database: (base URL, process, its output's file)."""
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    environment.update(database_environment(), PORT=str(port), WEB_BIND="127.0.0.1")
    environment.update(GM_PROVIDER="scripted", PYTHONUNBUFFERED="1")
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    log = tmp_path / "web.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["sh", "-c", f"exec {web_line()}"],
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        up = lambda: process.poll() is not None or answers(base)  # noqa: E731
        wait_for(up, START_DEADLINE, "no answer", log)
        assert process.poll() is None, log.read_text()
        yield base, process, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def a_failed_sign_in(base: str, username: str, forwarded_for: str) -> int:
    request = urllib.request.Request(
        f"{base}/api/auth/token/",
        data=f'{{"username": "{username}", "password": "wrong"}}'.encode(),
        headers={"Content-Type": "application/json", "X-Forwarded-For": forwarded_for},
        method="POST",
    )
    try:
        urllib.request.urlopen(request, timeout=30).close()
    except urllib.error.HTTPError as answer:
        return answer.code
    return 200


def test_the_procfile_server_serves_the_app_as_production_needs(live_world: World, procfile_web):
    base, process, log = procfile_web
    world = live_world

    assert a_failed_sign_in(base, world.other.username, "203.0.113.9") == 400
    [attempt] = AccessAttempt.objects.filter(username=world.other.username)
    assert attempt.ip_address == "127.0.0.1"  # the peer's, not the header's

    def logged() -> bool:
        return '"POST /api/auth/token/ HTTP/1.1" 400' in log.read_text(errors="replace")

    wait_for(logged, 10, "no access line", log)

    token = Token.objects.create(user=world.player).key  # its password hasher is not the tests'
    with pytest.raises(AssertionError, match="403"):
        Feed(base, world.campaign.pk, token, origin="http://evil.example")
    feed = Feed(base, world.campaign.pk, token, origin=base)
    try:
        wait_for(lambda: bool(feed.events), 10, "no hello", log)
        assert feed.events[0]["type"] == "hello"

        process.send_signal(signal.SIGTERM)
        # uvicorn ends by the signal it caught, once its shutdown is done
        assert process.wait(timeout=STOP_DEADLINE) in (0, -signal.SIGTERM), log.read_text()
        assert feed.closed.wait(timeout=1)
    finally:
        feed.close()
    output = log.read_text()
    assert "Application shutdown complete." in output and "Finished server process" in output
