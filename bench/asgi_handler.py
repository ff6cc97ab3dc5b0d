"""What Django's ASGI path costs per HTTP request, against the app's one-hop handler
(`config.asgi.OneHopASGIHandler`: the middleware chain built synchronous, entered once), side by
side through real servers: two Daphne processes on the same PostgreSQL and Redis, one serving
`config.asgi:application`, the other the same app with Django's own ASGI handler
(bench/stock_asgi.py).

    .venv/bin/python bench/asgi_handler.py [--smoke] [rounds] [seconds] [clients]

Each round runs `clients` players' closed loop against one server for `seconds`, then against
the other (which goes first alternates round by round, so machine noise hits both alike): each
player posts a turn of their own, a `modify_creature` tool call on their own character into it
(what a player's powers reach: docs/tools.md), and reads `/state/`,
again as soon as it is answered, with its `Authorization: Token`. Reported per handler: the
server process's CPU per request (user + system, /proc), requests per second, and p50/p95 of
the requests' round trips; then the ratios, one-hop / Django's.
A benchmark, not a test: it asserts no figure, only that every request got its expected answer.
"""

import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from _setup import django_on_postgres, production_environment, sizes
from table_load import _http
from ws_fanout import build_table, cpu_seconds, start_servers, stop_servers

VARIANTS = {"one-hop (ours)": "config.asgi:application", "Django's": "stock_asgi:application"}


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


def play(port: int, table: dict[str, Any], token: str, deadline: float, out: dict) -> None:
    """One player's closed loop until `deadline`: round trips (ms) into out["ms"]; an unexpected
    answer into out["problems"]."""
    base = f"campaigns/{table['campaign'].pk}/"
    hero = table["heroes"][token]
    hit = {"tool": "modify_creature", "input": {"creature_id": hero, "hp_delta": -1}}
    steps = [
        ("POST", "turns/", {"message": "I swing.", "run_gm": False}, 201),
        ("POST", "turns/{turn}/tool-calls/", hit, 201),
        ("GET", "state/", None, 200),
    ]
    turn = None
    while time.monotonic() < deadline:
        for method, path, body, expected in steps:
            url = f"http://127.0.0.1:{port}/api/{base}{path.format(turn=turn)}"
            status, answer, ms = _http(method, url, token, body)
            out["ms"].append(ms)
            if status != expected:
                out["problems"].append(f"{method} {path}: {status} {answer}")
                return
            if path == "turns/":
                turn = answer["id"]


def phase(
    server: tuple[Any, int], table: dict[str, Any], seconds: int, player: Callable = play
) -> dict[str, Any]:
    """The players' closed loop (`player`) against one server: requests, CPU seconds, wall
    seconds, ms."""
    process, port = server
    out: dict[str, list] = {"ms": [], "problems": []}
    deadline = time.monotonic() + seconds
    cpu, started = cpu_seconds([process.pid]), time.monotonic()
    players = [
        threading.Thread(target=player, args=(port, table, token, deadline, out))
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


def main(rounds: int, seconds: int, clients: int) -> None:
    table = with_heroes(build_table(clients))
    with tempfile.TemporaryDirectory() as logs:
        servers = dict(zip(VARIANTS, start_servers(2, logs, list(VARIANTS.values())), strict=True))
        try:
            for server in servers.values():  # warm each server's path; not counted
                phase(server, table, 1)
            results: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
            for i in range(rounds):
                for name in list(VARIANTS)[:: 1 if i % 2 == 0 else -1]:
                    results[name].append(phase(servers[name], table, seconds))
        finally:
            stop_servers(list(servers.values()))
    print(f"{clients} players, closed loop, {rounds} rounds x {seconds} s per handler, alternating")
    print("(a turn, a modify_creature call into it, GET state/; a Daphne each, PostgreSQL, Redis)")
    print(f"{'handler':16} {'CPU ms/request':>15} {'requests/s':>11} {'p50 ms':>8} {'p95 ms':>8}")
    figures = {}
    for name, runs in results.items():
        cpu = 1000 * sum(r["cpu"] for r in runs) / sum(r["requests"] for r in runs)
        rate = statistics.median(r["requests"] / r["wall"] for r in runs)
        ms = [m for r in runs for m in r["ms"]]
        p50, p95 = statistics.median(ms), statistics.quantiles(ms, n=20)[18]
        figures[name] = (cpu, rate)
        print(f"{name:16} {cpu:15.2f} {rate:11.1f} {p50:8.1f} {p95:8.1f}")
    (ours_cpu, ours_rate), (stock_cpu, stock_rate) = figures.values()
    print(f"ratio one-hop / Django's: CPU per request {ours_cpu / stock_cpu:.2f}x, ", end="")
    print(f"requests/s {ours_rate / stock_rate:.2f}x")


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"rounds": 6, "seconds": 5, "clients": 4},
        smoke={"rounds": 1, "seconds": 1, "clients": 2},
    )

    production_environment()
    with django_on_postgres("asgi_handler"):
        main(**run)
