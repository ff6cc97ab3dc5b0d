"""Daphne against uvicorn, side by side in one run, serving the same app
(`config.asgi:application`) with production settings on PostgreSQL and Redis: what an HTTP
request costs each server, and how fast an undo's event reaches N websocket clients through each.

    .venv/bin/python bench/asgi_servers.py [--smoke] [rounds] [seconds] [players] [undos]
                                           [servers] [N ...]

(REDIS_URL, the channels-redis server, defaults to the embedded one's database 4; the database is a
fresh one, dropped at the end.)

Each server runs in a process of its own with the flags a production line gives it
(`SERVERS`: Daphne as the Procfile ran it, uvicorn on uvloop and httptools with the
websockets (sans-I/O) protocol, lifespan on, access log on for both).

HTTP: one server of each kind runs at once; each round runs `players` players' closed loop
against one for `seconds`, then against the other (which goes first alternates round by round,
so the host's noise hits both alike): each player posts a turn, a `modify_creature` call on
their own character into it, reads `/state/` (with their `Authorization: Token`) and then the
board's HTML fragment (`/campaigns/{id}/board/`, with their session cookie, as the page fetches
it). Reported per server: its process's CPU per request
(user + system, /proc: the figure the host's noise moves least), requests per second, p50/p95
of the round trips.

Fan-out: as bench/ws_fanout.py measures it (an undo's request to its `interaction_reverted`
event at each of N sockets, the clients in other processes, one host clock), with 1 and then
`servers` processes of one kind behind the same Redis, N = each count; for each row both kinds
run in turn, the first alternating row by row. Reported: p50/p95/p99 of the receipts, the time
to a round's first receipt (the undo itself), the undo request's own round trip, the servers'
CPU per round (a hit's and an undo's fan-out) and the client processes' (picows's client, on
this same host, where a browser's would not be).

Then the ratios uvicorn / Daphne of each figure (below 1: uvicorn spends or waits less).
A benchmark, not a test: it asserts no figure, only that every request got its expected answer
and every socket every event.
"""

import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from _setup import django_on_postgres, production_environment, sizes
from table_load import _http
from ws_fanout import (
    TIMEOUT,
    Row,
    build_table,
    cpu_seconds,
    measure,
    percentile,
    start_servers,
    stop_servers,
)

SERVERS = {
    "Daphne": lambda port, app: [
        *(sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)),
        *("--access-log", "-", app),
    ],
    "uvicorn": lambda port, app: [
        *(sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port)),
        *("--loop", "uvloop", "--http", "httptools", "--ws", "websockets-sansio"),
        *("--lifespan", "on", "--no-proxy-headers", "--timeout-graceful-shutdown", "3", app),
    ],
}


# -- HTTP ----------------------------------------------------------------------------------------


def with_heroes(table: dict[str, Any]) -> dict[str, Any]:
    """The table with each player's own character, by token: what their tool calls act on."""
    from rest_framework.authtoken.models import Token

    from campaigns.services import creature_create

    heroes = {}
    for key in table["tokens"]:
        user = Token.objects.select_related("user").get(key=key).user
        heroes[key] = creature_create(
            campaign=table["campaign"],
            by=table["owner"],
            name=f"Hero of {user.username}",
            kind="pc",
            hp=10**6,
            max_hp=10**6,
            controlled_by=user,
        ).pk
    return {**table, "heroes": heroes}


def with_sessions(table: dict[str, Any]) -> dict[str, Any]:
    """The table with each player's session cookie, by token: a signed-in browser's."""
    from django.conf import settings
    from django.test import Client
    from rest_framework.authtoken.models import Token

    cookies = {}
    for key in table["tokens"]:
        client = Client()
        client.force_login(Token.objects.select_related("user").get(key=key).user)
        name = settings.SESSION_COOKIE_NAME
        cookies[key] = f"{name}={client.cookies[name].value}"
    return {**table, "cookies": cookies}


def page(url: str, cookie: str) -> tuple[int, float]:
    """GET an HTML page with a session cookie: (status, round trip in ms)."""
    request = urllib.request.Request(url, headers={"Cookie": cookie, "Accept": "text/html"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            status = response.status
            response.read()
    except urllib.error.HTTPError as error:
        status = error.code
        error.read()
    return status, (time.perf_counter() - started) * 1000


def play(port: int, table: dict[str, Any], token: str, deadline: float, out: dict) -> None:
    """One player's closed loop until `deadline`: a turn, a tool call into it, the state, the
    board fragment; round trips (ms) into out["ms"], an unexpected answer into out["problems"]."""
    campaign = table["campaign"].pk
    api = f"http://127.0.0.1:{port}/api/campaigns/{campaign}/"
    board = f"http://127.0.0.1:{port}/campaigns/{campaign}/board/"
    hero = table["heroes"][token]
    hit = {"tool": "modify_creature", "input": {"creature_id": hero, "hp_delta": -1}}
    while time.monotonic() < deadline:
        status, turn, ms = _http("POST", api + "turns/", token, {"message": "I swing."})
        out["ms"].append(ms)
        if status != 201:
            out["problems"].append(f"POST turns/: {status} {turn}")
            return
        for method, path, body, expected in (
            ("POST", f"turns/{turn['id']}/tool-calls/", hit, 201),
            ("GET", "state/", None, 200),
        ):
            status, answer, ms = _http(method, api + path, token, body)
            out["ms"].append(ms)
            if status != expected:
                out["problems"].append(f"{method} {path}: {status} {answer}")
                return
        status, ms = page(board, table["cookies"][token])
        out["ms"].append(ms)
        if status != 200:
            out["problems"].append(f"GET board/: {status}")
            return


def phase(server: tuple[Any, int], table: dict[str, Any], seconds: int) -> dict[str, Any]:
    """The players' closed loop against one server: requests, CPU seconds, wall seconds, ms."""
    process, port = server
    out: dict[str, list] = {"ms": [], "problems": []}
    deadline = time.monotonic() + seconds
    cpu, started = cpu_seconds([process.pid]), time.monotonic()
    players = [
        threading.Thread(target=play, args=(port, table, token, deadline, out))
        for token in table["tokens"]
    ]
    for player in players:
        player.start()
    for player in players:
        player.join()
    wall, cpu = time.monotonic() - started, cpu_seconds([process.pid]) - cpu
    if out["problems"]:
        raise SystemExit(f"port {port}: {out['problems'][:3]}")
    return {"requests": len(out["ms"]), "cpu": cpu, "wall": wall, "ms": out["ms"]}


def http_side_by_side(rounds: int, seconds: int, players: int) -> dict[str, list[dict]]:
    table = with_sessions(with_heroes(build_table(players)))
    servers = {}
    with tempfile.TemporaryDirectory(prefix="asgi_servers-") as logs:
        try:
            for name, command in SERVERS.items():
                with tempfile.TemporaryDirectory(dir=logs) as own:
                    servers[name] = start_servers(1, own, command)[0]
            for server in servers.values():  # warm each server's path; not counted
                phase(server, table, 1)
            results: dict[str, list[dict]] = {name: [] for name in SERVERS}
            for i in range(rounds):
                for name in list(SERVERS)[:: 1 if i % 2 == 0 else -1]:
                    results[name].append(phase(servers[name], table, seconds))
        finally:
            stop_servers(list(servers.values()))
    return results


def http_figures(runs: list[dict]) -> dict[str, float]:
    ms = [m for r in runs for m in r["ms"]]
    return {
        "CPU ms/request": 1000 * sum(r["cpu"] for r in runs) / sum(r["requests"] for r in runs),
        "requests/s": statistics.median(r["requests"] / r["wall"] for r in runs),
        "p50 ms": statistics.median(ms),
        "p95 ms": statistics.quantiles(ms, n=20)[18],
    }


# -- fan-out -------------------------------------------------------------------------------------


def fanout_side_by_side(undos: int, servers: int, counts: list[int]) -> list[tuple]:
    """(processes, N, server kind, Row) for every row, both kinds in turn."""
    from django.db import connections

    rows = []
    with tempfile.TemporaryDirectory(prefix="asgi_servers-") as logs:
        order = list(SERVERS)
        for topology in range(1, servers + 1):
            for clients in counts:
                for name in order:
                    connections.close_all()
                    with tempfile.TemporaryDirectory(dir=logs) as own:
                        running = start_servers(topology, own, SERVERS[name])
                        try:
                            row = measure(running, clients, undos)
                            rows.append((topology, clients, name, row))
                        finally:
                            stop_servers(running)
                order.reverse()
    return rows


def fanout_figures(row: Row) -> dict[str, float]:
    return {
        "p50 ms": statistics.median(row.latencies),
        "p95 ms": percentile(row.latencies, 95),
        "p99 ms": percentile(row.latencies, 99),
        "first p50": row.first,
        "undo HTTP p50": statistics.median(row.undo_trips),
        "CPU ms/round": row.server_cpu,
        "clients' CPU": row.client_cpu,
    }


# -- the report ----------------------------------------------------------------------------------


def ratios(figures: dict[str, dict[str, float]]) -> str:
    ours, theirs = figures["uvicorn"], figures["Daphne"]
    return ", ".join(f"{k} {ours[k] / theirs[k]:.2f}x" for k in ours if theirs[k])


def main(
    rounds: int, seconds: int, players: int, undos: int, servers: int, counts: list[int]
) -> None:
    http = http_side_by_side(rounds, seconds, players)
    fanout = fanout_side_by_side(undos, servers, counts)

    print(
        f"HTTP: {players} players, closed loop, {rounds} rounds x {seconds} s per server, "
        "alternating (a turn, a modify_creature call into it, GET state/, GET the board "
        "fragment with a session cookie; one process each, PostgreSQL, Redis)"
    )
    figures = {name: http_figures(runs) for name, runs in http.items()}
    print(f"{'server':8}" + "".join(f" {k:>15}" for k in next(iter(figures.values()))))
    for name, row in figures.items():
        print(f"{name:8}" + "".join(f" {v:15.2f}" for v in row.values()))
    print(f"ratio uvicorn / Daphne: {ratios(figures)}")

    print(
        f"\nFan-out: undo request -> interaction_reverted at each client; {undos} undos per row "
        "(+1 warm-up), PostgreSQL + Redis, picows clients in other processes; one host clock"
    )
    header = [
        *("p50 ms", "p95 ms", "p99 ms", "first p50"),
        *("undo HTTP p50", "CPU ms/round", "clients' CPU"),
    ]
    print(f"{'servers':>7} {'clients':>7} {'server':8}" + "".join(f" {k:>13}" for k in header))
    by_row: dict[tuple[int, int], dict[str, dict[str, float]]] = {}
    for topology, clients, name, row in fanout:
        by_row.setdefault((topology, clients), {})[name] = fanout_figures(row)
    for (topology, clients), kinds in by_row.items():
        for name in SERVERS:
            values = "".join(f" {v:13.1f}" for v in kinds[name].values())
            print(f"{topology:>7} {clients:>7} {name:8}{values}")
    for (topology, clients), kinds in by_row.items():
        print(f"ratio uvicorn / Daphne, {topology} x {clients}: {ratios(kinds)}")
    top = by_row.get((servers, max(counts)))
    if top is not None:
        print(
            f"goal: fan-out p95 <= 50 ms at 1000 clients over two servers; at {max(counts)} "
            f"clients over {servers}: Daphne {top['Daphne']['p95 ms']:.1f} ms, uvicorn "
            f"{top['uvicorn']['p95 ms']:.1f} ms"
        )


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={
            "rounds": 4,
            "seconds": 5,
            "players": 4,
            "undos": 10,
            "servers": 2,
            "counts": [200, 1000],
        },
        smoke={"rounds": 1, "seconds": 1, "players": 2, "undos": 1, "servers": 1, "counts": [2]},
    )

    production_environment()
    with django_on_postgres("asgi_servers"):
        main(**run)
