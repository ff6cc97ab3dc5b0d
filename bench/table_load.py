"""A table-shaped load through real servers: campaigns of players on websockets, posting turns
the GM answers in task workers, tool calls and undos, for a minute; then the same per-campaign
load, closed loop, on 1 campaign and on 8, with what the database's sessions wait for, to see
whether campaigns serialise on anything global.

    .venv/bin/python bench/table_load.py [--smoke] [campaigns] [players] [seconds] [think_ms]
        [servers] [workers] [scale_seconds] [scale ...]

(REDIS_URL, the channels-redis server, defaults to the embedded one's database 4; the database is a
fresh one, dropped at the end, and so is its throwaway copy.)

The app runs as production does (bench/ws_fanout.py's servers: `daphne config.asgi:application`
processes, DJANGO_DEBUG=0), with `manage.py task_worker --queue-name '*' --interval 0.5` task
workers running the scripted GM (GM_SCRIPTED_DELAY=0.2 s a round), on PostgreSQL + Redis. Each
player is a websocket (`Authorization: Token` and the server's own `Origin`) in one of
CLIENT_PROCESSES client processes; a campaign's players alternate between the servers.

**The table** (`seconds`): each player, every `think_ms` to twice that (uniform), does one of:
post a turn for the GM ("I attack the goblin.", 201 queued, answered by a worker), post a turn of
their own and a `modify_creature` tool call on their own character into it (what a player's
powers reach: docs/tools.md), undo their latest
turn, or read `/state/`. Reported per endpoint: p50/p95/p99 and the statuses (409 is the
table's answer to an undo that later calls depend on; any 5xx fails the run), the GM turns'
latency (the turn's POST to its `gm_turn_completed` at the posting player's socket), and
PostgreSQL backends on the database (sampled each second; they include the bench's own two).

**Throughput** (`scale_seconds`, for each count in `scale`): the same per-campaign table (the
same players, the same mix without GM turns, whose workers are a deliberately shared pool), each
player acting again as soon as it is answered: requests completed per second, and the ratio of
the largest count's to the smallest's. On 2 cores one campaign's closed loop already keeps the
host nearly busy, so that ratio stays near 1 whether or not campaigns share a lock; a shared
lock shows in the sessions' waits instead, see
docs/performance.md#table_loadpy-a-table-shaped-load-through-two-servers-and-the-task-workers.

**Checks, all of which fail the run:** no 5xx; no lost event: every socket's seq follows its
`hello` without a gap, or the socket resyncs through `/state/` (counted) as a client does, and
when the table is quiet every socket has reached its campaign's last event number; the log's
chains verify (`manage.py verify_log`); and each campaign's final `/state/` equals its initial
world with the committed (not reverted) tool calls of its log applied in sequence order through
the audited dispatch, in a throwaway copy of the database taken before the load.
A benchmark, not a test: it asserts no figure, only that every step did what it should.
"""

import asyncio
import io
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from _setup import ROOT, django_on_postgres, production_environment, sizes
from ws_fanout import TIMEOUT, answer, percentile, start_servers, stop_servers

CLIENT_PROCESSES = 4
TABLE_MIX = {"gm_turn": 0.15, "tool_call": 0.45, "undo": 0.25, "state": 0.15}
SCALE_MIX = {"tool_call": 0.7, "undo": 0.3}
GM_DELAY = 0.2
QUIET_TIMEOUT = 180  # seconds for the workers to answer every queued turn after the load
GOBLIN_HP = 500_000
REORDER_WAIT = 0.5  # seconds a socket waits for a gap's events, as static/js/table/socket.js does


# -- the players: separate processes, no Django --------------------------------------------------


def players_main(conn: Connection, players: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    """One client process: a websocket per player, then, on ("go", deadline), each player's
    actions until the deadline; then ("done", samples); then, given ("quiet", last seq per
    campaign), each socket's wait for its campaign's last event: ("sockets", stats)."""
    try:
        asyncio.run(_players(conn, players, plan))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        raise


def _http(method: str, url: str, token: str, body: Any = None) -> tuple[int, Any, float]:
    """(status, parsed JSON body or None, round trip in ms)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    request.add_header("Authorization", f"Token {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    elapsed = (time.perf_counter() - started) * 1000
    try:
        return status, json.loads(raw), elapsed
    except ValueError:
        return status, None, elapsed


async def open_feed(protocol: type, port: int, campaign: str, token: str, problems: list[str]):
    """A websocket of `protocol` (an autobahn client protocol that resolves `factory.hello` on
    the server's `hello`) on `campaign`'s feed at `port`, signed in by `token` with the server's
    own Origin, once its hello has come; RuntimeError if it does not."""
    from autobahn.asyncio.websocket import WebSocketClientFactory

    loop = asyncio.get_running_loop()
    factory = WebSocketClientFactory(
        f"ws://127.0.0.1:{port}/ws/campaigns/{campaign}/",
        origin=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Token {token}"},
    )
    factory.protocol = protocol
    factory.closing = False
    factory.hello = loop.create_future()
    factory.setProtocolOptions(openHandshakeTimeout=TIMEOUT, closeHandshakeTimeout=TIMEOUT)
    _, feed = await loop.create_connection(factory, "127.0.0.1", port)
    await asyncio.wait(
        [factory.hello, feed.is_closed], timeout=TIMEOUT, return_when="FIRST_COMPLETED"
    )
    if not factory.hello.done():
        raise RuntimeError(f"no hello on port {port}: {problems[-1:] or 'timed out'}")
    return feed


async def _players(conn: Connection, players: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    from autobahn.asyncio.websocket import WebSocketClientProtocol

    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=max(4, len(players) * 2))
    samples: list[tuple[str, int, float, float]] = []  # (endpoint, status, ms, wall time)
    problems: list[str] = []
    gm_posted: dict[int, float] = {}  # turn id -> wall time its POST was sent
    gm_latencies: list[float] = []

    def url(player: dict[str, Any], path: str) -> str:
        return f"http://127.0.0.1:{player['port']}/api/campaigns/{player['campaign']}/{path}"

    async def call(label: str, player: dict[str, Any], method: str, path: str, body=None):
        status, answer_, ms = await loop.run_in_executor(
            pool, _http, method, url(player, path), player["token"], body
        )
        samples.append((label, status, ms, time.time()))
        if status >= 500:
            problems.append(f"{label}: {status} {answer_}")
        return status, answer_

    class Feed(WebSocketClientProtocol):
        """A player's socket, kept in seq order as the page's own client keeps it
        (static/js/table/socket.js): an event past a gap is held for REORDER_WAIT, in which the
        missing ones usually arrive (two servers publish a campaign's events, each after its
        own commit); a gap still open then is refetched through `/state/`."""

        seq: int | None = None
        events = gaps = reordered = resyncs = late = 0
        missed: set[int]
        resyncing = False
        timer: asyncio.TimerHandle | None = None
        held: list[dict[str, Any]]
        player: dict[str, Any]

        def onMessage(self, payload: bytes, isBinary: bool) -> None:
            envelope = json.loads(payload)
            if envelope["type"] == "hello":
                self.seq, self.held, self.missed = envelope["seq"], [], set()
                self.factory.hello.set_result(None)
                return
            if self.resyncing:
                self.held.append(envelope)
                return
            self.take(envelope)

        def take(self, envelope: dict[str, Any]) -> None:
            if envelope["seq"] <= self.seq:  # already reflected (hello or a resync's state)
                if envelope["seq"] in self.missed:  # a gap's event, after its resync
                    self.missed.discard(envelope["seq"])
                    self.late += 1
                return
            if envelope["seq"] != self.seq + 1:  # a gap: wait for the missing events
                if self.timer is None:
                    self.gaps += 1
                    self.timer = loop.call_later(REORDER_WAIT, self.gap_open)
                self.held.append(envelope)
                return
            self.advance(envelope)
            self.held.sort(key=lambda e: e["seq"])
            while self.held and self.held[0]["seq"] <= self.seq + 1:
                following = self.held.pop(0)
                if following["seq"] == self.seq + 1:
                    self.advance(following)
            if not self.held and self.timer is not None:  # the gap closed within the wait
                self.reordered += 1
                self.timer.cancel()
                self.timer = None

        def advance(self, envelope: dict[str, Any]) -> None:
            self.seq = envelope["seq"]
            self.events += 1
            if envelope["type"] == "gm_turn_completed" and envelope["turn"] in gm_posted:
                gm_latencies.append((time.time() - gm_posted.pop(envelope["turn"])) * 1000)
            self.advanced.set()

        def gap_open(self) -> None:
            self.timer = None
            if self.held and not self.resyncing:
                self.missed.update(range(self.seq + 1, min(e["seq"] for e in self.held)))
                self.resyncing = True
                loop.create_task(self.resync())

        async def resync(self) -> None:
            self.resyncs += 1
            status, state = await call("GET state/ (resync)", self.player, "GET", "state/")
            if status != 200:
                problems.append(f"resync of campaign {self.player['campaign']}: {status}")
                return
            self.seq = max(self.seq, state["seq"])
            self.resyncing, held, self.held = False, self.held, []
            for envelope in sorted(held, key=lambda e: e["seq"]):
                if self.resyncing:
                    self.held.append(envelope)
                else:
                    self.take(envelope)
            self.advanced.set()

        def onOpen(self) -> None:
            self.advanced = asyncio.Event()  # set as the socket's seq moves on

        def onClose(self, wasClean: bool, code: int | None, reason: str | None) -> None:
            if not self.factory.closing:
                problems.append(f"socket closed by the server: {code} {reason}")

    gate = asyncio.Semaphore(2)  # handshakes at once per process: within Daphne's 5 s timeout

    async def connect(player: dict[str, Any]) -> Feed:
        async with gate:
            feed = await open_feed(
                Feed, player["port"], player["campaign"], player["token"], problems
            )
        feed.player = player
        return feed

    async def play(player: dict[str, Any], deadline: float) -> None:
        rng = random.Random(f"{player['campaign']}-{player['token']}")
        mix = plan["mix"]
        turns: list[int] = []  # this player's turns, newest last, not yet undone
        think = plan["think"]
        if think:
            await asyncio.sleep(rng.uniform(0, think[1]))  # players do not start in step
        while time.time() < deadline:
            action = rng.choices(list(mix), weights=list(mix.values()))[0]
            if action == "gm_turn":
                sent = time.time()
                status, body = await call(
                    "POST turns/ (GM)",
                    player,
                    "POST",
                    "turns/",
                    {"message": "I attack the goblin."},
                )
                if status == 201:
                    gm_posted[body["id"]] = sent
                    turns.append(body["id"])
            elif action == "tool_call":
                status, body = await call(
                    "POST turns/ (no GM)",
                    player,
                    "POST",
                    "turns/",
                    {"message": "I swing my axe.", "run_gm": False},
                )
                if status == 201:
                    turns.append(body["id"])
                    delta = rng.choice([-3, -2, -1, 1, 2])
                    await call(
                        "POST turns/{tid}/tool-calls/",
                        player,
                        "POST",
                        f"turns/{body['id']}/tool-calls/",
                        {
                            "tool": "modify_creature",
                            "input": {"creature_id": player["hero"], "hp_delta": delta},
                        },
                    )
            elif action == "undo" and turns:
                await call(
                    "POST turns/{tid}/undo/", player, "POST", f"turns/{turns.pop()}/undo/", {}
                )
            elif action == "state":
                await call("GET state/", player, "GET", "state/")
            if think:
                await asyncio.sleep(rng.uniform(*think))

    feeds = await asyncio.gather(*(connect(p) for p in players if p["socket"]))
    for player in players:  # warm each server's request path; not counted
        await loop.run_in_executor(pool, _http, "GET", url(player, "state/"), player["token"])
    conn.send(("ready", len(feeds)))
    commands: asyncio.Queue = asyncio.Queue()
    loop.add_reader(conn.fileno(), lambda: commands.put_nowait(conn.recv()))

    _, deadline = await commands.get()
    await asyncio.gather(*(play(p, deadline) for p in players))
    conn.send(("done", {"samples": samples, "gm": gm_latencies, "problems": problems}))

    _, last = await commands.get()

    async def caught_up(feed: Feed) -> None:
        target = last[feed.player["campaign"]]
        while feed.seq < target:
            feed.advanced.clear()
            await feed.advanced.wait()

    try:
        await asyncio.wait_for(asyncio.gather(*(caught_up(f) for f in feeds)), TIMEOUT)
    except TimeoutError:
        behind = [(f.player["campaign"], f.seq, last[f.player["campaign"]]) for f in feeds]
        problems.append(f"sockets behind their campaign's last event: {behind}")
    stats = [
        {
            "campaign": f.player["campaign"],
            "events": f.events,
            "gaps": f.gaps,
            "reordered": f.reordered,
            "resyncs": f.resyncs,
            "late": f.late,
            "never": len(f.missed),
            "seq": f.seq,
        }
        for f in feeds
    ]
    conn.send(("sockets", {"sockets": stats, "problems": problems, "samples": samples}))
    for feed in feeds:
        feed.factory.closing = True
        feed.sendClose()
    if feeds:  # a client process may hold no socket in a shape with fewer sockets than it
        await asyncio.wait([feed.is_closed for feed in feeds], timeout=TIMEOUT)
    pool.shutdown()


# -- the servers' side: workers, the world, the database -----------------------------------------


def start_workers(count: int, log_dir: str) -> list[subprocess.Popen]:
    """`count` task workers as the Procfile runs them, answering turns with the scripted GM."""
    env = dict(os.environ, GM_SCRIPTED_DELAY=str(GM_DELAY))
    workers = []
    for i in range(count):
        with open(os.path.join(log_dir, f"worker-{i}.log"), "w") as log:
            command = [sys.executable, "manage.py", "task_worker", "--queue-name", "*"]
            command += ["--interval", "0.5", "--no-reload", "--worker-id", f"bench-{i}"]
            workers.append(
                subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            )
    return workers


def stop_workers(workers: list[subprocess.Popen]) -> None:
    stop_servers([(process, 0) for process in workers])


def build_campaigns(sizes: list[int]) -> list[dict[str, Any]]:
    """A campaign per entry of `sizes`, with that many members holding API tokens, and a
    goblin."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from campaigns.models import Membership
    from campaigns.services import campaign_create, creature_create

    built = []
    for c, players in enumerate(sizes):
        owner = User.objects.create_user(f"gm-{c}")
        campaign = campaign_create(owner=owner, name=f"table {c}", approval_policy="none")
        goblin = creature_create(
            campaign=campaign,
            by=owner,
            name="Goblin",
            kind="monster",
            hp=GOBLIN_HP,
            max_hp=2 * GOBLIN_HP,
        )
        members = User.objects.bulk_create(User(username=f"p{i}-c{c}") for i in range(players))
        Membership.objects.bulk_create(Membership(campaign=campaign, user=p) for p in members)
        tokens = Token.objects.bulk_create(Token(user=u, key=Token.generate_key()) for u in members)
        # Each player's own character: what a player's tool calls may act on (docs/tools.md).
        heroes = [
            creature_create(
                campaign=campaign,
                by=owner,
                name=f"Hero {i}",
                kind="pc",
                hp=GOBLIN_HP,
                max_hp=2 * GOBLIN_HP,
                controlled_by=member,
            ).pk
            for i, member in enumerate(members)
        ]
        built.append(
            {
                "id": str(campaign.pk),
                "goblin": goblin.pk,
                "heroes": heroes,
                "tokens": [t.key for t in tokens],
            }
        )
    return built


def serialise_campaigns_globally() -> None:
    """Break the rule on purpose (BENCH_GLOBAL_LOCK=1): every write of a campaign row (its
    event numbers, its log head; every turn, tool call and undo makes one) first takes one
    advisory lock shared by all campaigns, held to the end of its transaction, as a global
    counter row would. The sessions' waits then show `Lock:advisory`: proof that the bench can
    see a global serialisation (on 2 cores the 8-vs-1 throughput ratio cannot; it is near 1
    either way)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION bench_global_lock() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_advisory_xact_lock(1); RETURN NEW; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER bench_global_lock BEFORE UPDATE ON campaigns_campaign "
            "FOR EACH ROW EXECUTE FUNCTION bench_global_lock()"
        )
    print("BENCH_GLOBAL_LOCK=1: every campaign's writes serialised on one advisory lock")


def database_url(name: str) -> str:
    """The URL of database `name` on the bench's PostgreSQL server."""
    return os.environ["DATABASE_URL"].rsplit("/", 1)[0] + f"/{name}"


def release_connections() -> None:
    """Close this process's connections and its pool: a template copy needs the database idle."""
    from django.db import connections

    connections.close_all()
    for connection in connections.all():
        if connection.vendor == "postgresql" and connection.pool is not None:
            connection.close_pool()


def admin_sql(statement: str) -> None:
    import psycopg

    with psycopg.connect(database_url("postgres"), autocommit=True) as conn:
        conn.execute(statement)


class BackendSampler(threading.Thread):
    """Every SAMPLE_EVERY seconds, until stopped: the database's PostgreSQL sessions
    (pg_stat_activity), what each active one is waiting for (its wait event; for a lock, the
    lock's type and, for a row or table lock, its table), and the host's CPU (/proc/stat). What
    the throughput phases print from it tells a global serialisation (sessions waiting on one
    table lock, an advisory lock, one row of a shared table) from a per-campaign one (waits on
    the campaign's own row) and from plain CPU saturation."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, int]] = []
        self.waits: list[tuple[float, list[str]]] = []
        self.cpu: list[tuple[float, int, int]] = []  # (time, busy jiffies, all jiffies)
        self.processes: list[tuple[float, Counter]] = []  # (time, CPU jiffies by program)
        self.stopping = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
            while not self.stopping.wait(SAMPLE_EVERY):
                now = time.time()
                rows = conn.execute(WAITS_SQL).fetchall()
                self.samples.append((now, len(rows) + 1))  # + this session
                self.waits.append((now, [what for state, what in rows if state == "active"]))
                self.cpu.append((now, *_cpu_jiffies()))
                self.processes.append((now, _jiffies_by_program()))

    def between(self, start: float, end: float) -> list[int]:
        return [n for t, n in self.samples if start <= t <= end]

    def report(self, start: float, end: float) -> str:
        """The phase's host CPU use and its sessions' waits, one line each."""
        cpu = [c for c in self.cpu if start <= c[0] <= end]
        busy = (cpu[-1][1] - cpu[0][1]) / max(1, cpu[-1][2] - cpu[0][2]) if len(cpu) > 1 else 0
        waits = [w for t, ws in self.waits if start <= t <= end for w in ws]
        shown = ", ".join(
            f"{what} {n / len(waits):.0%}" for what, n in Counter(waits).most_common(6)
        )
        spent = [p for p in self.processes if start <= p[0] <= end]
        programs = ""
        if len(spent) > 1:
            used = spent[-1][1] - spent[0][1]  # per program, jiffies over the phase
            cores = (spent[-1][0] - spent[0][0]) * os.sysconf("SC_CLK_TCK")
            programs = ", ".join(f"{name} {n / cores:.0%}" for name, n in used.most_common(6))
        return (
            f"host CPU busy {busy:.0%} of {os.cpu_count()} cores; by program (% of one core): "
            f"{programs or 'none'}\nactive sessions' waits ({len(waits)} samples): "
            f"{shown or 'none'}"
        )


SAMPLE_EVERY = 0.2
# Each other session of the database: its state and what it waits for; a lock wait names the
# lock's type and table (a row lock's `tuple`, or the `transactionid` of the row's holder), and
# in parentheses the first table of the statement that waits.
WAITS_SQL = r"""
SELECT a.state,
       COALESCE(a.wait_event_type || ':' || a.wait_event, 'running')
       || COALESCE(' ' || (SELECT string_agg(DISTINCT COALESCE(l.relation::regclass::text,
                                                               l.locktype), ',')
                           FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted), '')
       || CASE WHEN a.wait_event_type = 'Lock'
               THEN ' (' || COALESCE(substring(a.query from
                   '(?:FROM|UPDATE|INTO)\s+"?([a-z_]+)"?'), '?') || ')' ELSE '' END
FROM pg_stat_activity a
WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
"""


def _cpu_jiffies() -> tuple[int, int]:
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


PROGRAMS = {  # what a process runs, by its command line: the names the report uses
    "daphne": "Daphne",
    "task_worker": "task workers",
    "postgres": "PostgreSQL",
    "redis-server": "Redis",
    "multiprocessing": "players (bench)",
}


def _jiffies_by_program() -> Counter:
    """The CPU time (user + system, in clock ticks) each kind of process has used so far."""
    used: Counter = Counter()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as stat, open(f"/proc/{pid}/cmdline", "rb") as cmd:
                fields, command = stat.read().rsplit(")", 1)[1].split(), cmd.read()
        except OSError:  # gone meanwhile
            continue
        name = next((n for key, n in PROGRAMS.items() if key.encode() in command), "other")
        used[name] += int(fields[11]) + int(fields[12])  # utime, stime
    return used


# -- one phase: the players on some campaigns for some seconds -----------------------------------


@dataclass
class Phase:
    name: str
    campaigns: list[dict[str, Any]]
    seconds: float
    sockets: int  # players per campaign with a websocket (the first ones)
    samples: list[tuple[str, int, float, float]] = field(default_factory=list)
    gm: list[float] = field(default_factory=list)
    feeds: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    started: float = 0.0
    backends: list[int] = field(default_factory=list)
    load: str = ""


def progress(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def run_phase(
    phase: Phase, ports: list[int], plan: dict[str, Any], sampler: BackendSampler
) -> None:
    from campaigns.models import Campaign, Turn

    players = [
        {
            "campaign": c["id"],
            "goblin": c["goblin"],
            "hero": c["heroes"][j],
            "token": token,
            "port": ports[(i + j) % len(ports)],
            "socket": j < phase.sockets,
        }
        for i, c in enumerate(phase.campaigns)
        for j, token in enumerate(c["tokens"])
    ]
    spawn = multiprocessing.get_context("spawn")
    clients = []
    for share in range(min(CLIENT_PROCESSES, len(players))):
        ours, theirs = spawn.Pipe()
        process = spawn.Process(
            target=players_main, args=(theirs, players[share::CLIENT_PROCESSES], plan), daemon=True
        )
        process.start()
        clients.append((ours, process))
    try:
        sockets = sum(p["socket"] for p in players)
        progress(f"{phase.name}: {len(players)} players, {sockets} sockets connecting")
        assert sum(answer(c, p, "ready", QUIET_TIMEOUT) for c, p in clients) == sockets
        progress(f"{phase.name}: playing {phase.seconds} s")
        phase.started = time.time() + 0.5
        for conn, _ in clients:
            conn.send(("go", phase.started + phase.seconds))
        for conn, process in clients:
            done = answer(conn, process, "done", phase.seconds + QUIET_TIMEOUT)
            phase.gm += done["gm"]
        ended = time.time()
        progress(f"{phase.name}: waiting for the GM turns and the events")
        ids = [c["id"] for c in phase.campaigns]
        waiting = Turn.objects.filter(
            campaign_id__in=ids, status__in=[Turn.Status.QUEUED, Turn.Status.RUNNING]
        )
        deadline = time.monotonic() + QUIET_TIMEOUT
        while waiting.exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"{phase.name}: {waiting.count()} GM turns still unanswered")
            time.sleep(0.5)
        last = dict(Campaign.objects.filter(pk__in=ids).values_list("pk", "event_seq"))
        last = {str(k): v for k, v in last.items()}
        for conn, _ in clients:
            conn.send(("quiet", last))
        for conn, process in clients:
            report = answer(conn, process, "sockets")
            phase.feeds += report["sockets"]
            phase.problems += report["problems"]
            phase.samples += report["samples"]
        phase.backends = sampler.between(phase.started, ended)
        phase.load = sampler.report(phase.started, phase.started + phase.seconds)
    finally:
        for _, process in clients:
            process.join(timeout=TIMEOUT)
            if process.is_alive():
                process.terminate()


# -- the final state against the log, in a throwaway copy ---------------------------------------


def replay_main(
    conn: Connection, url: str, logs: dict[str, list[tuple[int, str, Any, str]]]
) -> None:
    """In the copy of the database taken before the load: each campaign's committed calls, in
    sequence order, through the audited dispatch; then every campaign's canonical state."""
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth.models import User

    from audit.models import InvocationOrigin
    from audit.services import invocation_dispatch
    from campaigns.models import Campaign
    from campaigns.selectors import campaign_state

    states = {}
    for campaign_id, calls in logs.items():
        campaign = Campaign.objects.get(pk=campaign_id)
        for user_id, tool, data, source in calls:
            # With the powers it ran with (the GM's for the GM's calls: docs/tools.md).
            row = invocation_dispatch(
                campaign=campaign,
                actor=User.objects.get(pk=user_id),
                tool_name=tool,
                input=data,
                source=InvocationOrigin(source),
            )
            assert row.status == row.Status.COMMITTED, (campaign_id, tool, data, row.error)
        states[campaign_id] = campaign_state(campaign)
    conn.send(states)


def check_states(campaigns: list[dict[str, Any]], copy: str, port: int) -> list[str]:
    """Each campaign's `/state/` (less its seq) against its replayed log; the mismatches."""
    from audit.models import ToolInvocation

    logs: dict[str, list[tuple[int, str, Any, str]]] = {c["id"]: [] for c in campaigns}
    committed = ToolInvocation.objects.filter(
        campaign_id__in=list(logs), status=ToolInvocation.Status.COMMITTED
    ).order_by("campaign_id", "sequence")
    for campaign_id, user_id, tool, data, source in committed.values_list(
        "campaign_id", "user_id", "tool_name", "input", "source"
    ):
        logs[str(campaign_id)].append((user_id, tool, data, source))
    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=replay_main, args=(theirs, database_url(copy), logs)
    )
    process.start()
    if not ours.poll(TIMEOUT * 10):
        process.terminate()
        raise SystemExit("the replay did not answer")
    replayed = ours.recv()
    process.join()
    mismatches = []
    for c in campaigns:
        status, state, _ = _http(
            "GET", f"http://127.0.0.1:{port}/api/campaigns/{c['id']}/state/", c["tokens"][0]
        )
        state.pop("seq", None)
        if status != 200 or json.dumps(state, sort_keys=True) != json.dumps(
            replayed[c["id"]], sort_keys=True, default=str
        ):
            mismatches.append(f"campaign {c['id']}: /state/ {status} differs from its replayed log")
    return mismatches, sum(len(v) for v in logs.values())


# -- the report ----------------------------------------------------------------------------------


def endpoint_table(phase: Phase) -> None:
    by_label: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for label, status, ms, _ in phase.samples:
        by_label[label].append((status, ms))
    print(f"{'endpoint':<30} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  statuses")
    for label in sorted(by_label):
        rows = by_label[label]
        times = [ms for _, ms in rows]
        statuses = " ".join(f"{s}x{n}" for s, n in sorted(Counter(s for s, _ in rows).items()))
        print(
            f"{label:<30} {len(rows):>6} {statistics.median(times):>8.1f}"
            f" {q(times, 95):>8.1f} {q(times, 99):>8.1f}  {statuses}"
        )
    if phase.gm:
        print(
            f"{'GM turn: POST -> completed':<30} {len(phase.gm):>6}"
            f" {statistics.median(phase.gm):>8.1f} {q(phase.gm, 95):>8.1f} {q(phase.gm, 99):>8.1f}"
            "  (at the posting player's socket)"
        )


def q(values: list[float], pct: int) -> float:
    return percentile(values, pct) if len(values) > 1 else values[0]


def throughput(phase: Phase) -> float:
    end = phase.started + phase.seconds
    done = [t for label, _, _, t in phase.samples if "resync" not in label]
    return sum(1 for t in done if phase.started <= t <= end) / phase.seconds


def main(
    campaigns: int,
    players: int,
    seconds: int,
    think_ms: int,
    servers: int,
    workers: int,
    scale_seconds: int,
    scale: list[int],
) -> None:
    think = (think_ms / 1000, 2 * think_ms / 1000)  # a player's pause between actions
    from django.core.management import call_command
    from django.db import connection

    # The throughput phases: each count of campaigns with the table's players per campaign, and
    # the most players any of those has (`players` x the largest count) spread over each smaller
    # count, every campaign watched by `players` sockets (so a request's events go to as many
    # sockets whichever way its players are spread).
    crowd = players * max(scale)
    shapes = [(count, players) for count in scale]
    shapes += [(count, crowd // count) for count in scale if count * players < crowd]
    shapes.sort()
    if os.environ.get("BENCH_GLOBAL_LOCK") == "1":
        serialise_campaigns_globally()
    world = build_campaigns(
        [players] * campaigns + [n for count, n in shapes for _ in range(count)]
    )
    database = connection.settings_dict["NAME"]
    copy = f"{database}_initial"
    release_connections()
    admin_sql(f'CREATE DATABASE "{copy}" TEMPLATE "{database}"')
    phases = [
        Phase(
            f"table: {campaigns} campaigns x {players} players",
            world[:campaigns],
            seconds,
            players,
        )
    ]
    start = campaigns
    for count, each in shapes:
        phases.append(
            Phase(
                f"throughput: {count} campaign(s) x {each} players",
                world[start : start + count],
                scale_seconds,
                players,
            )
        )
        start += count
    sampler = BackendSampler()
    try:
        with tempfile.TemporaryDirectory(prefix="table_load-") as log_dir:
            running = start_servers(servers, log_dir)
            pool = start_workers(workers, log_dir)
            sampler.start()
            try:
                ports = [port for _, port in running]
                for port in ports:  # a cold server's first request imports and connects
                    first = world[0]
                    url = f"http://127.0.0.1:{port}/api/campaigns/{first['id']}/state/"
                    assert _http("GET", url, first["tokens"][0])[0] == 200
                run_phase(phases[0], ports, {"mix": TABLE_MIX, "think": think}, sampler)
                for phase in phases[1:]:
                    run_phase(phase, ports, {"mix": SCALE_MIX, "think": None}, sampler)
                mismatches, replayed = check_states(world, copy, ports[0])
            finally:
                sampler.stopping.set()
                stop_workers(pool)
                stop_servers(running)
                for i in range(workers):
                    with open(os.path.join(log_dir, f"worker-{i}.log")) as log:
                        if "Traceback" in (text := log.read()):
                            print(f"worker {i} log:\n{text[-3000:]}")
    finally:
        admin_sql(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')
    call_command("verify_log", stdout=io.StringIO())  # raises on a broken chain

    failures = list(mismatches)
    print(
        f"PostgreSQL + Redis, {servers} Daphne processes, {workers} task_worker processes "
        f"(scripted GM, {GM_DELAY} s a round), players' websockets and requests in "
        f"{CLIENT_PROCESSES} client processes"
    )
    for phase in phases:
        print(
            f"\n== {phase.name}, {phase.seconds} s"
            + (
                f", each player every {think[0]:g}-{think[1]:g} s"
                if phase is phases[0]
                else ", closed loop (no think time, no GM turns)"
            )
        )
        endpoint_table(phase)
        fives = sum(1 for _, status, _, _ in phase.samples if status >= 500)
        gaps = sum(s["gaps"] for s in phase.feeds)
        events = sum(s["events"] for s in phase.feeds)
        late = sum(s["late"] for s in phase.feeds)
        reordered = sum(s["reordered"] for s in phase.feeds)
        resyncs = sum(s["resyncs"] for s in phase.feeds)
        never = sum(s["never"] for s in phase.feeds)
        backends = phase.backends or [0]
        print(
            f"requests/s {throughput(phase):.1f} (players' requests completed in the window); "
            f"5xx {fives}; PostgreSQL backends max {max(backends)} (median "
            f"{statistics.median(backends):g})\nsockets {len(phase.feeds)}: events in order "
            f"{events}; gaps {gaps}: {reordered} closed by their events within "
            f"{REORDER_WAIT:g} s (published out of order by the two servers), {resyncs} resynced "
            f"via /state/ (of their missed events {late} came later, {never} never); all at "
            f"their campaign's last seq: {'yes' if not phase.problems else 'NO'}"
        )
        print(phase.load)
        failures += [f"{phase.name}: {p}" for p in phase.problems]
        failures += [f"{phase.name}: {fives} responses 5xx"] if fives else []
    by_shape = {(len(p.campaigns), len(p.campaigns[0]["tokens"])): p for p in phases[1:]}
    few, most = min(scale), max(scale)
    if few < most:
        rate = {shape: throughput(p) for shape, p in by_shape.items()}
        wide, alone, crowded = rate[most, players], rate[few, players], rate[few, crowd // few]
        print(
            f"\nthroughput, the same {crowd} players on {most} campaigns / on {few}: "
            f"{wide:.1f} / {crowded:.1f} requests/s = {wide / crowded:.2f}x "
            f"(what one campaign's own lock serialises: {most} campaigns "
            "run side by side unless something global serialises them)"
            f"\nthroughput, {most} campaigns / {few}, {players} players each: {wide:.1f} / "
            f"{alone:.1f} requests/s = {wide / alone:.2f}x ({most // few} times the players: "
            "what the host's cores have left beyond one campaign's table)"
        )
    print(
        f"final state: {len(world)} campaigns' /state/ equal to their initial world + {replayed} "
        f"committed calls replayed through the dispatch in a copy: {len(world) - len(mismatches)} "
        f"of {len(world)}; verify_log: every chain intact"
    )
    if failures:
        raise SystemExit("FAILED:\n" + "\n".join(failures))


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={
            "campaigns": 20,
            "players": 4,
            "seconds": 60,
            "think_ms": 3000,
            "servers": 2,
            "workers": 2,
            "scale_seconds": 15,
            "scale": [1, 8],
        },
        smoke={
            "campaigns": 1,
            "players": 2,
            "seconds": 4,
            "think_ms": 150,
            "servers": 1,
            "workers": 1,
            "scale_seconds": 1,
            "scale": [1, 2],
        },
    )
    production_environment()
    with django_on_postgres("table_load"):
        main(**run)
