"""`make run` (scripts/run.py): the Procfile's web server and worker start in one command on the
embedded default (PostgreSQL and Redis of the test's own, under its DATA_DIR), serve a live table
(a GM turn run by the worker process reaches a browser's websocket on the web process), and stop
together on Ctrl-C; the next `make run` shows the same table; a busy port is refused at once."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from campaigns.management.commands.seed_demo import CAMPAIGN, demo_password
from tests.servers import Feed, http

ROOT = Path(__file__).resolve().parent.parent
SERVE_DEADLINE = 120  # a fresh PostgreSQL, its migrations on a busy 2-core machine, and start-up
STOP_DEADLINE = 20  # honcho's SIGTERM, then its SIGKILL after 5 s


def web_server() -> str:
    """The program the Procfile's `web:` line runs."""
    web = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line[:4] == "web:")
    return web.split()[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_env(tmp_path: Path) -> dict[str, str]:
    """The embedded default in a data folder of the test's own (`data_dir`)."""
    ignored = ("DATABASE_URL", "REDIS_URL", "PORT", "WEB_BIND", "DATA_DIR")
    env = {k: v for k, v in os.environ.items() if k not in ignored and not k.startswith("DJANGO_")}
    return {**env, "DATA_DIR": str(tmp_path / "data"), "GM_PROVIDER": "scripted"}


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """The test's data folder; its engines are stopped afterwards, as `make stop` stops them."""
    yield tmp_path / "data"
    if (tmp_path / "data").exists():
        stopped = subprocess.run(
            [sys.executable, "-m", "config.embedded", "stop", str(tmp_path / "data")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stopped.returncode == 0, stopped.stderr


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, read from /proc (zombies are dead: they count as gone)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            children.setdefault(int(parent), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@dataclass
class Run:
    process: subprocess.Popen
    lines: list[str]
    seen: set[int] = field(default_factory=set)

    def children(self) -> set[int]:
        """The processes below the run now; every one ever seen is remembered for clean-up."""
        now = descendants(self.process.pid)
        self.seen |= now
        return now


@contextmanager
def started(port: int, tmp_path: Path) -> Iterator[Run]:
    """`make run PORT=port` as a terminal starts it: in a session of its own, so Ctrl-C (SIGINT
    to the foreground process group) can be sent as a terminal sends it. Output is collected
    line by line; whatever the test does, nothing it saw outlives it."""
    process = subprocess.Popen(
        [sys.executable, "scripts/run.py", "--port", str(port)],
        cwd=ROOT,
        env=run_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    run = Run(process, [])
    threading.Thread(target=lambda: run.lines.extend(process.stdout), daemon=True).start()
    try:
        yield run
    finally:
        if process.poll() is None:
            run.children()
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_DEADLINE)
        for pid in run.seen:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def wait_for(condition, deadline: float, what: str, lines: list[str]):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        result = condition()
        if result:
            return result
        time.sleep(0.2)
    pytest.fail(f"{what} within {deadline} s; output:\n{''.join(lines)}")


def login_page_status(port: int) -> int | None:
    try:
        url = f"http://127.0.0.1:{port}/accounts/login/"
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except (urllib.error.URLError, OSError):
        return None


def token_of(base: str, username: str) -> str:
    credentials = {"username": username, "password": demo_password(username)}
    status, _, body = http("POST", f"{base}/api/auth/token/", credentials)
    assert status == 200, body
    return body["token"]


def an_open_page(port: int, username: str, lines: list[str]) -> Feed:
    """A demo player's page left open: its websocket to the demo campaign's feed, greeted."""
    base = f"http://127.0.0.1:{port}"
    token = token_of(base, username)
    status, _, body = http("GET", f"{base}/api/campaigns/", token=token)
    assert status == 200, body
    campaigns = body["results"] if isinstance(body, dict) else body
    [campaign] = [c for c in campaigns if c["name"] == CAMPAIGN]
    feed = Feed(base, campaign["id"], token, origin=base)
    wait_for(lambda: feed.events, 10, "no hello on the websocket", lines)
    return feed


def a_turn_reaches_the_table_live(port: int, lines: list[str]) -> None:
    """A demo player's page, as `make run` serves it: signed in through the API, the demo
    campaign's feed open (token header, the page's own Origin), a turn posted. The worker
    process runs the GM; its events must reach this socket on the web process. The demo table
    runs the default policy, `watchful`: the GM's hit on a goblin lands at once, and the ending
    waits until the demo GM approves it, and a worker then plays that turn on."""
    base = f"http://127.0.0.1:{port}"
    token, gm_token = (token_of(base, name) for name in ("alice", "gm"))
    status, _, body = http("GET", f"{base}/api/campaigns/", token=token)
    assert status == 200, body
    campaigns = body["results"] if isinstance(body, dict) else body
    [campaign] = [c for c in campaigns if c["name"] == CAMPAIGN]
    feed = Feed(base, campaign["id"], token, origin=base)
    try:
        wait_for(lambda: feed.events, 10, "no hello on the websocket", lines)
        assert feed.events[0]["type"] == "hello"
        turns = f"{base}/api/campaigns/{campaign['id']}/turns/"
        status, _, turn = http("POST", turns, {"message": "I attack the goblin"}, token)
        assert (status, turn["status"]) == (201, "queued"), turn
        completed = feed.wait_for("gm_turn_completed", turn["id"])
        status, _, ending = http("POST", turns, {"message": "We end the adventure"}, token)
        assert (status, ending["status"]) == (201, "queued"), ending
        held = feed.wait_for("approval_requested", ending["id"])
        approve = f"{base}/api/campaigns/{campaign['id']}/invocations/{held['invocation']}/approve/"
        status, _, body = http("POST", approve, {}, gm_token)
        assert (status, body.get("status")) == (200, "committed"), body
        ended = feed.wait_for("gm_turn_completed", ending["id"])
    finally:
        feed.close()
    assert completed["data"]["status"] == ended["data"]["status"] == "completed"
    assert not [
        e for e in feed.events if e["type"] == "approval_requested" and e["turn"] == turn["id"]
    ]
    kinds = [e["type"] for e in feed.events if e["turn"] == turn["id"]]
    assert {"gm_turn_started", "state_changed"} <= set(kinds)  # sent by the worker process
    seqs = [e["seq"] for e in feed.events]
    assert seqs == sorted(seqs)


def the_table_played(port: int) -> dict:
    """The demo table as a player reads it: its turns (message and status) and its state."""
    base = f"http://127.0.0.1:{port}"
    token = token_of(base, "alice")
    _, _, body = http("GET", f"{base}/api/campaigns/", token=token)
    campaigns = body["results"] if isinstance(body, dict) else body
    [campaign] = [c for c in campaigns if c["name"] == CAMPAIGN]
    _, _, turns = http("GET", f"{base}/api/campaigns/{campaign['id']}/turns/", token=token)
    _, _, state = http("GET", f"{base}/api/campaigns/{campaign['id']}/state/", token=token)
    return {
        "turns": [(t["messages"][0]["content"], t["status"]) for t in turns["results"]],
        "state": state,
    }


def log_lines_come_once(port: int, lines: list[str]) -> None:
    """A request's log line is printed once, not once per handler on its way to the root."""
    missing = f"/no-such-page-{uuid.uuid4().hex}/"
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}{missing}", timeout=5)
    except urllib.error.HTTPError as answer:
        assert answer.code == 404

    # The server's access line comes after the request's own log lines (one process, one
    # stream): uvicorn's `"GET /path HTTP/1.1" 404 Not Found`, Daphne's `"GET /path" 404 ...`.
    def access_line() -> bool:
        return any(f'"GET {missing}' in line and '" 404' in line for line in lines)

    wait_for(access_line, 10, "no access line", lines)
    assert len([line for line in lines if f"Not Found: {missing}" in line]) == 1, lines[-20:]


def test_make_run_serves_a_live_table_and_ctrl_c_stops_every_process(tmp_path, data_dir):
    port = free_port()
    with started(port, tmp_path) as run:
        wait_for(lambda: login_page_status(port) == 200, SERVE_DEADLINE, "no 200", run.lines)

        def workers() -> list[int]:
            return [p for p in run.children() if "task_worker" in command_line(p)]

        wait_for(workers, SERVE_DEADLINE, "no task_worker process", run.lines)
        wait_for(lambda: any("worker.1" in x for x in run.lines), 10, "no worker.1", run.lines)
        assert any("web.1" in line for line in run.lines)
        children = run.children()
        assert any(web_server() in command_line(p) for p in children)

        a_turn_reaches_the_table_live(port, run.lines)
        played = the_table_played(port)
        assert len(played["turns"]) == 2 and played["state"]["campaign"]["status"] == "completed"
        log_lines_come_once(port, run.lines)
        pages = [an_open_page(port, name, run.lines) for name in ("alice", "bob")]

        os.killpg(run.process.pid, signal.SIGINT)  # Ctrl-C, while two pages hold websockets

        run.process.wait(timeout=STOP_DEADLINE)
        wait_for(lambda: not any(map(alive, children)), STOP_DEADLINE, "a child left", run.lines)
        assert run.process.returncode == 130  # honcho: interrupted
        assert any("SIGINT received" in line for line in run.lines)
        # The web server stopped by itself (uvicorn: its graceful shutdown, 3 s at most), before
        # honcho's SIGKILL (5 s after its SIGTERM): open websockets do not hold it up.
        assert not any("sending SIGKILL" in line for line in run.lines), run.lines[-20:]
        assert all(page.closed.is_set() for page in pages)
        assert login_page_status(port) is None

    with started(port, tmp_path) as again:  # the next `make run`: the same table
        wait_for(lambda: login_page_status(port) == 200, SERVE_DEADLINE, "no 200", again.lines)
        assert the_table_played(port) == played
        os.killpg(again.process.pid, signal.SIGINT)
        again.process.wait(timeout=STOP_DEADLINE)


def refused(tmp_path: Path, port: str) -> subprocess.CompletedProcess:
    """A run that must stop before it starts anything: well within this timeout."""
    return subprocess.run(
        [sys.executable, "scripts/run.py", "--port", port],
        cwd=ROOT,
        env=run_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_busy_port_is_refused_at_once_before_anything_starts(tmp_path, data_dir):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = refused(tmp_path, str(port))
    assert result.returncode == 1
    message = result.stderr.strip()
    assert message.splitlines() == [message]  # one line, no traceback
    assert f"cannot serve on 127.0.0.1:{port}" in message
    assert f"make run PORT={port + 1}" in message
    assert not data_dir.exists()  # no engine started, no migration ran


def test_a_port_that_is_not_a_number_is_refused(tmp_path, data_dir):
    result = refused(tmp_path, "80a")
    assert result.returncode == 2
    assert "'80a' is not a port number" in result.stderr
