"""Real server and worker processes, for the tests (through the fixtures in tests/servers.py)
and the benchmarks (bench/gm_throughput.py) alike: nothing here needs pytest.

The app runs in Daphne, forked by Channels' `DaphneProcess` once Django is set up (the child
inherits the settings that point at the caller's database). GM turns run in task workers:
`worker_start` starts a `manage.py task_worker` process on the same database, as the Procfile's
`worker:` runs it.
"""

import base64
import hashlib
import json
import multiprocessing
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any

from asgiref.sync import SyncToAsync
from channels.layers import channel_layers
from channels.routing import get_default_application
from daphne.testing import DaphneProcess
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.db import connections

ROOT = Path(__file__).resolve().parent.parent

# The server's PostgreSQL sessions carry this name, so a test can count them apart from its own.
SERVER_APPLICATION_NAME = "undoable-gm-test-server"


def _application():
    """Runs in the forked child, before its first query. The child gets channel layers of its
    own: a layer used here already would hand it this process's connections and tasks (of
    event loops the child does not run), and its sockets would hear nothing."""
    channel_layers.backends.clear()
    for connection in connections.all():
        connection.settings_dict["OPTIONS"]["application_name"] = SERVER_APPLICATION_NAME
    return ASGIStaticFilesHandler(get_default_application())


def _release_database_connections() -> None:
    """The child must share none of this process's database sockets: close the connections and
    any connection pool (whose open sockets a fork would copy); both reopen on first use."""
    connections.close_all()
    for connection in connections.all():
        connection.close_pool()


class UvicornProcess(multiprocessing.get_context("fork").Process):
    """uvicorn with the Procfile's options in a forked child, as `DaphneProcess` runs Daphne:
    `port`, `ready` (set once the socket listens: a request waits in its backlog until the
    server accepts), `errors`. SIGTERM (`terminate`) stops it as honcho's does."""

    def __init__(self, get_application: Any) -> None:
        super().__init__()
        self.get_application = get_application
        self.port = multiprocessing.Value("i", 0)
        self.ready = multiprocessing.Event()
        self.errors = multiprocessing.Queue()

    def run(self) -> None:
        try:
            import uvicorn

            listening = socket.socket()
            listening.bind(("127.0.0.1", 0))
            listening.listen(128)
            config = uvicorn.Config(
                self.get_application(),
                **{"loop": "uvloop", "http": "httptools", "ws": "websockets-sansio"},
                **{"lifespan": "on", "proxy_headers": False, "timeout_graceful_shutdown": 3},
                log_level="warning",
            )
            self.port.value = listening.getsockname()[1]
            self.ready.set()
            uvicorn.Server(config).run(sockets=[listening])
        except BaseException as exc:
            self.errors.put((exc, traceback.format_exc()))


def web_server_process() -> Any:
    """The tests' server: Daphne, or uvicorn with TEST_WEB_SERVER=uvicorn (the Procfile's)."""
    if os.environ.get("TEST_WEB_SERVER", "daphne") == "uvicorn":
        return UvicornProcess(get_application=_application)
    return DaphneProcess(host="127.0.0.1", get_application=_application)


@contextmanager
def daphne_server() -> Iterator[str]:
    """The whole app (HTTP, websockets, static files) in a forked Daphne (or uvicorn:
    `web_server_process`) on a free port: its base URL, until the body ends."""
    _release_database_connections()
    process = web_server_process()
    # Nor its thread for database work from async code: once this process has used it, the
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
            raise RuntimeError(f"The server did not start.\n{error}")
        yield f"http://127.0.0.1:{process.port.value}"
    finally:
        process.terminate()
        process.join(timeout=10)


def http(
    method: str, url: str, body: Any = None, token: str = "", timeout: float = 30
) -> tuple[int, Message, Any]:
    """One plain HTTP request, as an outside client sends it: (status, headers, parsed body).
    The headers are looked up by name whatever its case (uvicorn sends names in lower case,
    Daphne capitalised); the body is JSON when the server says so, else text, so an HTML error
    page shows as such."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Token {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, message, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, message, raw = error.code, error.headers, error.read()
    if message.get_content_type() == "application/json":
        return status, message, json.loads(raw)
    return status, message, raw.decode(errors="replace")


def api_token(base_url: str, username: str) -> str:
    """Sign in through the API as a client would (test users' password is `pw-<name>`)."""
    status, _, body = http(
        "POST",
        f"{base_url}/api/auth/token/",
        {"username": username, "password": "pw-" + username},
    )
    assert status == 200, body
    return body["token"]


FEED_DEADLINE = 45.0  # seconds a Feed waits for an event or a read
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 §1.3


class Feed:
    """A client of `/ws/campaigns/{id}/` with a token header (and an `Origin` if given, as a
    page of that origin would send it) speaking RFC 6455 over a plain socket, reading on a
    thread of its own: `events` holds every envelope, `closed` tells that the server closed."""

    def __init__(self, base_url: str, campaign_id: Any, token: str, origin: str = "") -> None:
        url = urllib.parse.urlsplit(base_url)
        self.sock = socket.create_connection((url.hostname, url.port), timeout=FEED_DEADLINE)
        origin_header = f"Origin: {origin}\r\n" if origin else ""
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /ws/campaigns/{campaign_id}/ HTTP/1.1\r\nHost: {url.netloc}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                f"Sec-WebSocket-Key: {key}\r\nAuthorization: Token {token}\r\n{origin_header}\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        assert head.startswith(b"HTTP/1.1 101") and accept.encode() in head, head
        self.events: list[dict[str, Any]] = []
        self.closed = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            data += chunk
        return data

    def _read(self) -> None:
        try:
            while True:
                first, second = self._exactly(2)
                length = second & 0x7F
                if length == 126:
                    length = struct.unpack("!H", self._exactly(2))[0]
                elif length == 127:
                    length = struct.unpack("!Q", self._exactly(8))[0]
                payload = self._exactly(length)
                opcode = first & 0x0F
                if opcode == 1:
                    self.events.append(json.loads(payload))
                elif opcode == 9:  # ping: answer with a (masked) pong
                    self._send(0xA, payload)
                elif opcode == 8:
                    return
        except OSError:
            return
        finally:
            self.closed.set()

    def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked)

    def close(self) -> None:
        self.sock.close()

    def wait_for(self, type: str, turn: int) -> dict[str, Any]:
        deadline = time.monotonic() + FEED_DEADLINE
        while time.monotonic() < deadline:
            for envelope in list(self.events):
                if envelope["type"] == type and envelope["turn"] == turn:
                    return envelope
            time.sleep(0.02)
        raise AssertionError(f"no {type} for turn {turn} within {FEED_DEADLINE} s: {self.events}")


@dataclass
class WorkerProcess:
    """A `manage.py task_worker` process; its output goes to `log`."""

    name: str
    process: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: the process dies where it stands, as in a crash or an OOM kill."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def database_environment() -> dict[str, str]:
    """The environment that points a child process's settings at this process's database."""
    db = connections["default"].settings_dict
    user = urllib.parse.quote(db["USER"] or "")
    password = ":" + urllib.parse.quote(db["PASSWORD"]) if db["PASSWORD"] else ""
    host = urllib.parse.quote(db["HOST"] or "127.0.0.1", safe="")  # a socket's folder, perhaps
    return {"DATABASE_URL": f"postgres://{user}{password}@{host}:{db['PORT'] or 5432}/{db['NAME']}"}


def worker_start(
    name: str,
    log: Path,
    *,
    interval: float = 0.1,
    wait_max: float = 10,
    verbosity: int = 1,
    threads: int = 1,
    **env: str,
) -> WorkerProcess:
    """A task worker process (`manage.py task_worker`, every queue, no start-up delay) named
    `name`, idle until an enqueue wakes it or for `wait_max` seconds at most (polling every
    `interval` seconds while it cannot listen), running `threads` jobs at once, on this
    process's database, running the scripted GM, with `env` (GM_SCRIPTED_DELAY=..., or
    GM_PROVIDER=anthropic and the ANTHROPIC_* settings for another GM) added to its
    environment. It publishes through Redis, to other processes' websockets."""
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    environment.update(database_environment(), **{"GM_PROVIDER": "scripted", **env})
    command = [sys.executable, "manage.py", "task_worker", "--queue-name", "*", "--no-reload"]
    command += ["--no-startup-delay", "--interval", str(interval), "--worker-id", name]
    command += ["--wait-max", str(wait_max), "--verbosity", str(verbosity)]
    command += ["--threads", str(threads)]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=out, stderr=out)
    return WorkerProcess(name, process, log)
