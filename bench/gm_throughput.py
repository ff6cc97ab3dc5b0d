"""GM turns in task workers: turns per minute with 1, 2 and 4 worker processes side by side, and
how long posting a turn takes while dozens wait for the GM.

    .venv/bin/python bench/gm_throughput.py [--smoke] [campaigns] [turns] [queued] [delay_ms]
                                            [workers ...]

(REDIS_URL, the channel layer's server, defaults to the embedded one's database 4.)

All of it as in production, on PostgreSQL + Redis: a real Daphne server, clients posting with
API tokens, `manage.py task_worker` processes running the scripted GM, which waits `delay_ms`
before each round as a model thinks. Every turn says "I attack the goblin": two rounds (the
attack's `modify_creature` call, then the closing words), one tool call; the goblin has HP to
survive every blow, so no turn takes a different path.

Throughput: for each worker count, fresh campaigns and fresh workers; once every worker is
polling, `turns` turns per campaign are posted and the clock runs until the last one ends.
A campaign's turns run one at a time, oldest first, so N workers serve at most N campaigns at
once; "of ideal" compares with N (or the number of campaigns, if fewer) times one turn's
measured GM time. The machine's cores bound the figures for more workers than cores.

Latency: with LATENCY_WORKERS workers running the GM, CLIENTS threads post `queued` turns over
the campaigns as fast as the server answers, each POST timed from request to parsed 201.

A benchmark, not a test: it asserts no figure, only that every turn ended `completed` with
exactly one committed tool call of its own, and fails loudly otherwise.
"""

import os
import statistics
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _setup import django_on_postgres, sizes

MESSAGE = "I attack the goblin."
ROUNDS = 2  # the attack's tool call, then the close
GOBLIN_HP = 10**6
PLAYERS = 2
CLIENTS = 4
LATENCY_WORKERS = 2
POLL = 0.1


@dataclass
class Table:
    """A campaign: its owner, players with a character each (and an API token), a goblin."""

    campaign_id: int
    goblin_id: int
    tokens: list[str]


@dataclass
class Run:
    workers: int
    turn_ids: list[int] = field(default_factory=list)
    seconds: float = 0.0  # first POST to the last turn's end
    gm_seconds: list[float] = field(default_factory=list)  # claim to last round, per turn
    post_ms: list[float] = field(default_factory=list)
    post_seconds: float = 0.0  # first POST to the last answer


def build_tables(count: int) -> list[Table]:
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from campaigns.services import campaign_create, creature_create, membership_add

    tables = []
    for number in range(count):
        tag = uuid.uuid4().hex[:8]
        owner = User.objects.create_user(f"owner-{tag}")
        campaign = campaign_create(
            owner=owner, name=f"Throughput {number + 1}", approval_policy="none"
        )
        tokens = []
        for seat in range(PLAYERS):
            player = User.objects.create_user(f"p{seat}-{tag}")
            membership_add(campaign=campaign, by=owner, username=player.username)
            creature_create(
                campaign=campaign,
                by=owner,
                name=f"Hero {seat + 1}",
                kind="pc",
                hp=20,
                max_hp=20,
                controlled_by=player,
                x=seat,
                y=0,
            )
            tokens.append(Token.objects.create(user=player).key)
        goblin = creature_create(
            campaign=campaign,
            by=owner,
            name="Goblin",
            kind="monster",
            hp=GOBLIN_HP,
            max_hp=GOBLIN_HP,
        )
        tables.append(Table(campaign.pk, goblin.pk, tokens))
    return tables


class Workers:
    """The worker processes, grown or shrunk to the count a measurement needs (between
    measurements they are idle: every turn has ended)."""

    def __init__(self, delay: float, logs: Path) -> None:
        self.delay, self.logs = delay, logs
        self.running: list[Any] = []

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: object) -> None:
        self.resize(0)

    def resize(self, count: int) -> None:
        """`count` workers, returned once each is polling for tasks."""
        from tests.processes import worker_start

        while len(self.running) > count:
            self.running.pop().stop()
        new = [
            worker_start(
                f"bench-worker-{n + 1}",
                self.logs / f"worker-{n + 1}-{uuid.uuid4().hex[:6]}.log",
                interval=0.5,  # the Procfile's
                GM_SCRIPTED_DELAY=str(self.delay),
                LOG_LEVEL="INFO",  # for the worker's "Starting worker" line
            )
            for n in range(len(self.running), count)
        ]
        self.running += new
        deadline = time.monotonic() + 60
        while not all("Starting worker" in w.output() for w in new):
            dead = [w for w in new if w.process.poll() is not None]
            if dead or time.monotonic() > deadline:
                culprit = (dead or new)[0]
                raise SystemExit(f"{culprit.name} did not start:\n{culprit.output()[-3000:]}")
            time.sleep(POLL)

    def show_logs(self) -> None:
        for worker in self.running:
            print(f"--- {worker.name}, last lines:\n{worker.output()[-2000:]}")


def turn_jobs(tables: list[Table], count: int) -> list[tuple[Table, str]]:
    """`count` turns to post, round robin over the tables, each by the table's next player."""
    return [
        (tables[n % len(tables)], tables[n % len(tables)].tokens[n // len(tables) % PLAYERS])
        for n in range(count)
    ]


def post_turns(server: str, jobs: list[tuple[Table, str]], run: Run) -> None:
    """Post the turns from CLIENTS threads, as fast as the server answers, timing each."""
    from tests.processes import http

    def post(job: tuple[Table, str]) -> tuple[float, int]:
        table, token = job
        url = f"{server}/api/campaigns/{table.campaign_id}/turns/"
        started = time.perf_counter()
        status, _, body = http("POST", url, {"message": MESSAGE}, token=token)
        elapsed = (time.perf_counter() - started) * 1000
        if status != 201 or body.get("status") != "queued":
            raise SystemExit(f"POST {url} answered {status}: {body}")
        return elapsed, body["id"]

    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as clients:
        for elapsed, turn_id in clients.map(post, jobs):
            run.post_ms.append(elapsed)
            run.turn_ids.append(turn_id)
    run.post_seconds = time.perf_counter() - started


def warm_up(server: str, tables: list[Table]) -> None:
    """A few reads through every client thread, so the first timed POST does not pay for the
    server's first connections and imports."""
    from tests.processes import http

    def read(table: Table) -> None:
        url = f"{server}/api/campaigns/{table.campaign_id}/turns/"
        status, _, body = http("GET", url, token=table.tokens[0])
        if status != 200:
            raise SystemExit(f"GET {url} answered {status}: {body}")

    with ThreadPoolExecutor(CLIENTS) as clients:
        list(clients.map(read, tables * CLIENTS))


def wait_ended(run: Run, timeout: float) -> None:
    from django.db import connection

    from campaigns.models import Turn

    waiting = Turn.objects.filter(
        pk__in=run.turn_ids, status__in=[Turn.Status.QUEUED, Turn.Status.RUNNING]
    )
    deadline = time.monotonic() + timeout
    while waiting.exists():
        if time.monotonic() > deadline:
            left = waiting.count()
            raise SystemExit(f"{left} of {len(run.turn_ids)} turns still waiting after {timeout} s")
        time.sleep(POLL)
    connection.close()


def check(run: Run, tables: list[Table], posted: int) -> None:
    """Every turn completed, in ROUNDS rounds, with one committed `modify_creature` on the
    goblin under the tool_use id of its first round; each goblin lost what its turns dealt."""
    from django.db.models import Count, Max

    from audit.models import ToolInvocation
    from campaigns.models import Creature, Turn
    from gm.models import GMRound

    turns = Turn.objects.filter(pk__in=run.turn_ids)
    statuses = dict(turns.values_list("status").annotate(n=Count("pk")))
    if len(run.turn_ids) != posted or statuses != {"completed": len(run.turn_ids)}:
        raise SystemExit(f"turns ended {statuses}, expected all {len(run.turn_ids)} completed")
    rounds = dict(
        GMRound.objects.filter(turn__in=turns).values_list("turn").annotate(n=Count("pk"))
    )
    if set(rounds.values()) != {ROUNDS} or len(rounds) != len(run.turn_ids):
        raise SystemExit(f"rounds per turn {sorted(set(rounds.values()))}, expected {ROUNDS}")
    calls = ToolInvocation.objects.filter(turn__in=turns)
    per_turn = dict(calls.values_list("turn").annotate(n=Count("pk")))
    odd = calls.exclude(
        status=ToolInvocation.Status.COMMITTED,
        tool_name="modify_creature",
        tool_use_id="scripted-1",
    )
    if set(per_turn.values()) != {1} or len(per_turn) != len(run.turn_ids) or odd.exists():
        raise SystemExit(
            f"tool calls per turn {sorted(set(per_turn.values()))} over {len(per_turn)} turns, "
            f"{odd.count()} not a committed modify_creature: expected exactly one each"
        )
    for table in tables:
        inputs = calls.filter(campaign_id=table.campaign_id).values_list("input", flat=True)
        dealt = -sum(data["hp_delta"] for data in inputs)
        hp = Creature.objects.get(pk=table.goblin_id).hp
        if hp != GOBLIN_HP - dealt:
            raise SystemExit(f"goblin of campaign {table.campaign_id}: {hp} HP after {dealt} dealt")
    spans = turns.annotate(last=Max("gm_rounds__created_at")).values_list(
        "gm_transcript__created_at", "last"
    )
    run.gm_seconds = [(last - opened).total_seconds() for opened, last in spans]


def measure(server: str, workers: Workers, count: int, campaigns: int, turns: int) -> Run:
    """Fresh tables and `count` workers; once they poll, post `turns` turns over the tables
    and time from the first POST to the last turn's end."""
    tables = build_tables(campaigns)
    warm_up(server, tables)
    run = Run(count)
    workers.resize(count)
    try:
        started = time.perf_counter()
        post_turns(server, turn_jobs(tables, turns), run)
        serial = turns * ROUNDS * workers.delay
        wait_ended(run, timeout=3 * serial / min(count, campaigns) + 60)
        run.seconds = time.perf_counter() - started
    except BaseException:
        workers.show_logs()
        raise
    check(run, tables, turns)
    return run


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(campaigns: int, turns: int, queued: int, delay_ms: int, workers: list[int]) -> None:
    from tests.processes import daphne_server

    delay = delay_ms / 1000
    with (
        tempfile.TemporaryDirectory() as logs,
        daphne_server() as server,
        Workers(delay, Path(logs)) as processes,
    ):
        runs = [measure(server, processes, n, campaigns, campaigns * turns) for n in workers]
        latency = measure(server, processes, LATENCY_WORKERS, campaigns, queued)

    base = runs[0]
    rate = {run.workers: len(run.turn_ids) * 60 / run.seconds for run in runs}
    gm = statistics.median(s for run in runs for s in run.gm_seconds)
    print(
        f"{campaigns} campaigns x {turns} turns = {campaigns * turns} turns per row, "
        f"'{MESSAGE}' ({ROUNDS} rounds, 1 tool call), scripted GM waiting {delay:g} s per round; "
        "PostgreSQL + Redis, Daphne, task_worker processes"
    )
    print(
        f"measured GM time per turn (claim to last round): median {gm:.2f} s, "
        f"max {max(s for run in runs for s in run.gm_seconds):.2f} s "
        f"({ROUNDS} x {delay:g} s of waiting + the work)"
    )
    print(
        f"{'workers':>7} {'turns':>5} {'seconds':>8} {'turns/min':>9} "
        f"{'vs 1st row':>10} {'of ideal':>8}"
    )
    for run in runs:
        ideal = min(run.workers, campaigns) * 60 / statistics.median(run.gm_seconds)
        print(
            f"{run.workers:>7} {len(run.turn_ids):>5} {run.seconds:>8.1f} "
            f"{rate[run.workers]:>9.1f} {rate[run.workers] / rate[base.workers]:>9.2f}x "
            f"{rate[run.workers] / ideal:>8.0%}"
        )
    if 1 in rate and 2 in rate:
        print(f"2 workers / 1 worker: {rate[2] / rate[1]:.2f}x (goal >= 1.8x)")
    print(f"(this machine has {os.cpu_count()} cores: rows with more workers are informative)")
    values = latency.post_ms
    print(
        f"POST /api/campaigns/{{id}}/turns/ while {len(values)} turns are queued "
        f"({CLIENTS} client threads, {LATENCY_WORKERS} workers running the GM, token auth): "
        f"p50 {statistics.median(values):.1f} ms, p95 {percentile(values, 95):.1f} ms, "
        f"max {max(values):.1f} ms (goal p95 <= 100 ms); the server answered "
        f"{len(values) / latency.post_seconds:.0f} POSTs/s"
    )


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"campaigns": 8, "turns": 5, "queued": 50, "delay_ms": 2000, "workers": [1, 2, 4]},
        smoke={"campaigns": 2, "turns": 1, "queued": 4, "delay_ms": 100, "workers": [1, 2]},
    )
    with django_on_postgres("gm_throughput"):
        main(**run)
