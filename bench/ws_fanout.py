"""Fan-out of an undo through real servers: the time from an undo's HTTP request
(`POST /api/campaigns/{id}/turns/{tid}/undo/`) to its `interaction_reverted` event reaching each
of N websocket clients, N = 10, 50, 200, with one Daphne process and then two behind the same
Redis (channels-redis), on PostgreSQL.

    .venv/bin/python bench/ws_fanout.py [--smoke] [rounds] [servers] [N ...]

(REDIS_URL, the channels-redis server, defaults to the embedded one's database 4; the database is a
fresh one, dropped at the end.)

Each server is `daphne config.asgi:application` in a process of its own (production settings:
DJANGO_DEBUG=0, the scripted GM). The clients are websockets in separate client processes
(CLIENT_PROCESSES of them sharing the sockets), each socket signed in by a player's
`Authorization: Token` header with the server's own `Origin`, spread evenly over the servers.
They are picows's client (Cython): the clients share the servers' two cores, where browsers
would not, so the leaner they are the more truly they measure the servers
(`clients CPU/round`). They are strict: the handshake's accept key checked, every frame a whole
text message.
Every round the bench plays a turn (one `modify_creature` call, dispatched from this process),
waits until its `state_changed` has reached every socket (the table is quiet), tells the client
processes which turn's revert to wait for, reads `time.time()`, posts the turn's undo as its
owner to the first server and collects each socket's receipt time. The clock is the host's
wall clock, read by `time.time()` in every process on this one machine: the bench's and the
clients' readings are comparable to a few microseconds. A receipt counts from the undo's request
being sent, so every figure includes the undo itself (HTTP, the undo's transaction and commit)
as well as its fan-out; `undo HTTP` is the request's own round trip (the response leaves after
the event has been handed to Redis).

Every socket checks that its event numbers follow its `hello` without a gap; a gap, a refused
socket or a round in which a client misses the event fails the run. The first round of each row
warms connections and is not counted.
A benchmark, not a test: it asserts no figure, only that every step did what it should.
"""

import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from _setup import ROOT, django_on_postgres, production_environment, sizes
from _world import audited_hit, table

CLIENT_PROCESSES = 4
TIMEOUT = 30  # seconds: a server start, a handshake batch or an event, before the run fails


# -- the clients: separate processes, no Django --------------------------------------------------


def clients_main(conn: Connection, campaign: str, targets: list[tuple[int, str]]) -> None:
    """One client process: a websocket per (port, token) on `campaign`'s feed; then, until
    told to stop, for each ("expect", type, turn) from the bench, the receipt time of that
    turn's event of that type at every socket."""
    try:
        asyncio.run(_clients(conn, campaign, targets))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        raise


class Book:
    """What one client process's sockets received: each event's receipt times, every socket's
    seq checked against its `hello` and the one before, and whatever went wrong."""

    def __init__(self, sockets: int) -> None:
        self.sockets = sockets
        self.receipts: dict[tuple[str, int], list[float]] = defaultdict(list)
        self.arrived: dict[tuple[str, int], asyncio.Event] = defaultdict(asyncio.Event)
        self.problems: list[str] = []

    def text(self, feed: Any, payload: bytes | str, now: float) -> None:
        """A text message `payload` that reached `feed` (holding its `seq`, None before its
        hello, and its `hello` future) at `now`."""
        envelope = json.loads(payload)
        if envelope["type"] == "hello":
            feed.seq = envelope["seq"]
            feed.hello.set_result(None)
            return
        if feed.seq is None:
            self.problems.append(f"an event before the hello: {envelope['type']}")
            return
        if envelope["seq"] <= feed.seq:  # committed while joining: already counted as seen
            return
        if envelope["seq"] != feed.seq + 1:
            self.problems.append(f"seq gap: {feed.seq} then {envelope['seq']}")
        feed.seq = envelope["seq"]
        key = (envelope["type"], envelope["turn"])
        self.receipts[key].append(now)
        if len(self.receipts[key]) == self.sockets:
            self.arrived[key].set()


async def picows_feeds(book: Book, campaign: str, targets: list[tuple[int, str]]):
    """The sockets as picows's client (Cython: the clients, on the servers' own two cores,
    take little of them); and how to close them all. Strict: picows checks the handshake's
    Sec-WebSocket-Accept, and every frame must be a whole text message without extension bits,
    or a ping or pong (picows answers pings itself); a close the bench did not start is a
    problem."""
    from picows import WSListener, WSMsgType, ws_connect

    loop = asyncio.get_running_loop()

    class Feed(WSListener):
        def __init__(self) -> None:
            self.seq: int | None = None
            self.hello = loop.create_future()
            self.closing = False
            self.closed = loop.create_future()

        def on_ws_frame(self, transport: Any, frame: Any) -> None:
            now = time.time()
            kind = frame.msg_type
            if kind is WSMsgType.TEXT and frame.fin and not frame.rsv1:
                book.text(self, frame.get_payload_as_bytes(), now)
            elif kind is WSMsgType.CLOSE:
                if not self.closing:
                    self.closing = True  # told here, not again as the connection drops
                    book.problems.append(
                        f"socket closed by the server: {frame.get_close_code()} "
                        f"{frame.get_close_reason()}"
                    )
                transport.send_close(frame.get_close_code())
                transport.disconnect()
            elif kind not in (WSMsgType.PING, WSMsgType.PONG):
                book.problems.append(f"an unexpected frame: {frame}")

        def on_ws_disconnected(self, transport: Any) -> None:
            if not self.closing:
                book.problems.append("socket dropped without a close frame")
            if not self.hello.done():
                self.hello.set_exception(RuntimeError("closed before its hello"))
            if not self.closed.done():
                self.closed.set_result(None)

    async def connect(port: int, token: str, gate: asyncio.Semaphore) -> tuple[Any, Feed]:
        async with gate:
            transport, feed = await ws_connect(
                Feed,
                f"ws://127.0.0.1:{port}/ws/campaigns/{campaign}/",
                websocket_handshake_timeout=TIMEOUT,
                extra_headers={
                    "Origin": f"http://127.0.0.1:{port}",
                    "Authorization": f"Token {token}",
                },
            )
            try:
                await asyncio.wait_for(feed.hello, TIMEOUT)
            except (TimeoutError, RuntimeError) as error:
                raise RuntimeError(
                    f"no hello on port {port}: {book.problems[-1:] or error}"
                ) from None
            return transport, feed

    gate = asyncio.Semaphore(20)  # handshakes at once per process: below the listen backlog
    feeds = await asyncio.gather(*(connect(port, token, gate) for port, token in targets))

    async def close() -> None:
        for transport, feed in feeds:
            feed.closing = True
            transport.send_close()
        await asyncio.wait([feed.closed for _, feed in feeds], timeout=TIMEOUT)

    return feeds, close


async def _clients(conn: Connection, campaign: str, targets: list[tuple[int, str]]) -> None:
    loop = asyncio.get_running_loop()
    book = Book(len(targets))
    feeds, close = await picows_feeds(book, campaign, targets)
    conn.send(("ready", len(feeds)))

    commands: asyncio.Queue = asyncio.Queue()
    loop.add_reader(conn.fileno(), lambda: commands.put_nowait(conn.recv()))
    while (command := await commands.get())[0] == "expect":
        key = command[1:]
        try:
            await asyncio.wait_for(book.arrived[key].wait(), TIMEOUT)
        except TimeoutError:
            book.problems.append(f"{key}: {len(book.receipts[key])} of {len(targets)} received")
        if book.problems:
            conn.send(("problems", book.problems))
        else:
            conn.send(("received", book.receipts.pop(key)))
        del book.arrived[key]
    await close()


# -- the servers ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def daphne(port: int, app: str) -> list[str]:
    """The command line of a Daphne process serving `app` on `port`."""
    return [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), app]


def start_servers(
    count: int, log_dir: str, command: Callable[[int, str], list[str]] = daphne
) -> list[tuple[subprocess.Popen, int]]:
    """`count` server processes serving the app (`config.asgi:application`) on free ports
    (`command(port, app)`, Daphne by default), sharing this process's environment (database,
    Redis, keys), each ready to accept connections."""
    servers = []
    for i in range(count):
        port = free_port()
        with open(os.path.join(log_dir, f"daphne-{i}.log"), "w") as log:
            process = subprocess.Popen(
                command(port, "config.asgi:application"),
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        servers.append((process, port))
    deadline = time.monotonic() + TIMEOUT
    for i, (process, port) in enumerate(servers):
        if not listening(process, port, deadline):
            stop_servers(servers)
            with open(os.path.join(log_dir, f"daphne-{i}.log")) as log:
                raise SystemExit(f"The server on port {port} did not start:\n{log.read()[-3000:]}")
    return servers


def listening(process: subprocess.Popen, port: int, deadline: float) -> bool:
    """Whether `process` accepts connections on `port` before it exits or `deadline` passes."""
    while process.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def stop_servers(servers: list[tuple[subprocess.Popen, int]]) -> None:
    for process, _ in servers:
        process.terminate()
    for process, _ in servers:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- the table and a round -----------------------------------------------------------------------


def build_table(clients: int) -> dict[str, Any]:
    """A campaign with `clients` members, each with an API token, its owner with one too, and a
    monster to hit."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from campaigns.models import Membership

    campaign, owner, dummy = table(f"fan-out-{clients}")
    players = User.objects.bulk_create(User(username=f"p{i}-{owner}") for i in range(clients))
    Membership.objects.bulk_create(Membership(campaign=campaign, user=p) for p in players)
    tokens = Token.objects.bulk_create(
        Token(user=u, key=Token.generate_key()) for u in [owner, *players]
    )
    return {
        "campaign": campaign,
        "owner": owner,
        "owner_token": tokens[0].key,
        "tokens": [t.key for t in tokens[1:]],
        "dummy": dummy,
    }


def hit(table: dict[str, Any]) -> int:
    """A turn with one committed `modify_creature` call; its id."""
    from campaigns.services import turn_create

    turn = turn_create(campaign=table["campaign"], actor=table["owner"], message="I attack.")
    audited_hit(table["campaign"], table["owner"], table["dummy"], turn=turn)
    return turn.pk


def post_undo(port: int, table: dict[str, Any], turn: int) -> None:
    url = f"http://127.0.0.1:{port}/api/campaigns/{table['campaign'].pk}/turns/{turn}/undo/"
    request = urllib.request.Request(url, data=b"{}", method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Token {table['owner_token']}")
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        body = json.loads(response.read())
    assert response.status == 200 and len(body["reverted"]) == 1, (response.status, body)


def answer(
    conn: Connection, process: multiprocessing.Process, expected: str, timeout: float = TIMEOUT * 2
) -> Any:
    """The client process's next message, which must be `expected`."""
    if not conn.poll(timeout):
        raise SystemExit(f"client process {process.pid} did not answer {expected!r} in {timeout} s")
    kind, payload = conn.recv()
    if kind != expected:
        raise SystemExit(f"client process {process.pid}: {kind}: {payload}")
    return payload


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time the processes have used so far (Linux: /proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat(5))
    return total / os.sysconf("SC_CLK_TCK")


@dataclass
class Row:
    """One table row's samples, in milliseconds."""

    latencies: list[float] = field(default_factory=list)  # undo request -> each receipt
    spreads: list[float] = field(default_factory=list)  # round's first receipt -> each receipt
    undo_trips: list[float] = field(default_factory=list)  # the undo request's round trip
    server_cpu: float = 0.0  # the servers' CPU time per round
    client_cpu: float = 0.0  # the client processes' CPU time per round (on this same host)

    @property
    def first(self) -> float:
        """The median time from the undo's request to its round's first receipt: the undo
        itself and one socket's send, before the fan-out to the rest (`spreads`)."""
        return statistics.median(
            lat - spread
            for lat, spread in zip(self.latencies, self.spreads, strict=True)
            if spread == 0
        )


def measure(servers: list[tuple[subprocess.Popen, int]], clients: int, rounds: int) -> Row:
    """Every round's receipts at every client and what the round cost the servers and the
    client processes."""
    ports = [port for _, port in servers]
    pids = [process.pid for process, _ in servers]
    table = build_table(clients)
    targets = [(ports[i % len(ports)], token) for i, token in enumerate(table["tokens"])]
    spawn = multiprocessing.get_context("spawn")
    workers = []
    for share in range(min(CLIENT_PROCESSES, clients)):
        ours, theirs = spawn.Pipe()
        process = spawn.Process(
            target=clients_main,
            args=(theirs, str(table["campaign"].pk), targets[share::CLIENT_PROCESSES]),
            daemon=True,
        )
        process.start()
        workers.append((ours, process))
    try:
        connected = sum(answer(conn, process, "ready") for conn, process in workers)
        client_pids = [process.pid for _, process in workers]
        assert connected == clients, (connected, clients)
        row = Row()
        for round_ in range(rounds + 1):
            if round_ == 1:  # the first round warms connections and is not counted
                cpu_before = cpu_seconds(pids)
                client_cpu_before = cpu_seconds(client_pids)
            turn = hit(table)
            for event in ("state_changed", "interaction_reverted"):
                for conn, _ in workers:
                    conn.send(("expect", event, turn))
                if event == "state_changed":  # the hit has reached everyone: the table is quiet
                    for conn, process in workers:
                        answer(conn, process, "received")
            sent = time.time()
            post_undo(ports[0], table, turn)
            answered = time.time()
            received = [t for conn, process in workers for t in answer(conn, process, "received")]
            if round_:
                row.latencies += [(t - sent) * 1000 for t in received]
                row.spreads += [(t - min(received)) * 1000 for t in received]
                row.undo_trips.append((answered - sent) * 1000)
        row.server_cpu = (cpu_seconds(pids) - cpu_before) * 1000 / rounds
        row.client_cpu = (cpu_seconds(client_pids) - client_cpu_before) * 1000 / rounds
        for conn, _ in workers:
            conn.send(("stop",))
    finally:
        for _, process in workers:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
    return row


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(rounds: int, servers: int, counts: list[int]) -> None:
    from django.db import connections

    rows = []
    with tempfile.TemporaryDirectory(prefix="ws_fanout-") as log_dir:
        for topology in range(1, servers + 1):
            connections.close_all()
            running = start_servers(topology, log_dir)
            try:
                for clients in counts:
                    rows.append((topology, clients, measure(running, clients, rounds)))
            finally:
                stop_servers(running)

    print(
        f"undo request -> interaction_reverted at each client; {rounds} undos per row "
        "(+1 warm-up), PostgreSQL + Redis, Daphne processes, picows clients in "
        f"{CLIENT_PROCESSES} other processes; one host clock"
    )
    print(
        f"{'servers':>7} {'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}"
        f" {'first p50':>10} {'spread p95':>11} {'undo HTTP p50':>14} {'server CPU/round':>17}"
        f" {'clients CPU/round':>18}"
    )
    for topology, clients, row in rows:
        print(
            f"{topology:>7} {clients:>7} {statistics.median(row.latencies):>8.1f}"
            f" {percentile(row.latencies, 95):>8.1f} {max(row.latencies):>8.1f}"
            f" {row.first:>10.1f} {percentile(row.spreads, 95):>11.1f}"
            f" {statistics.median(row.undo_trips):>14.1f} {row.server_cpu:>17.1f}"
            f" {row.client_cpu:>18.1f}"
        )
    print(
        "(ms) first: the undo's request to its round's first receipt (the undo itself and one "
        "send); spread: a receipt's lag behind the round's first receipt (the fan-out to N "
        "sockets alone); undo HTTP: the undo request's round trip; server CPU/round: the Daphne "
        "processes' CPU time per round (a hit's and an undo's fan-out, the undo request); "
        "clients CPU/round: the client processes', on this same host (a browser's is not)"
    )


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"rounds": 20, "servers": 2, "counts": [10, 50, 200]},
        smoke={"rounds": 1, "servers": 1, "counts": [2]},
    )
    production_environment()
    with django_on_postgres("ws_fanout"):
        main(**run)
