"""What preparing the prepared reads on the server saves (core/prepared.py, `_Preparing`): a
turn's undo through the REST API, and three of the reads it makes, with every prepared read's
statement bound and prepared on PostgreSQL's server (as production runs it) against the same
statement quoted into its text on the client, so that PostgreSQL parses and plans it at every
call (as before 7 Dec 2026), side by side in one run, alternating call by call.

    .venv/bin/python bench/server_prepared.py [--smoke] [iterations] [warmup]

Production settings (bench/_setup.py's `production_environment`: DEBUG off, so no query log
turns the preparing off). A campaign of its owner's with a monster; each undo is of a turn of one
`modify_creature` call on it, played beforehand (not timed), newest turn first. The reads: the
campaign a member asks for (`campaign_get_for_member`), a turn (`turn_get`) and the chain's tip
(`audit.chain.chain_tip`). Reported per call, medians over `iterations`: the wall time, the CPU
time of the thread that runs it (the web process's, Django and the driver), and the CPU time of
the PostgreSQL backend that serves it (its /proc/<pid>/schedstat, nanoseconds); then the ratios
client-bound / prepared (above 1: preparing saves).
A benchmark, not a test: it asserts no figure, only that every undo reverted its call.
"""

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from _setup import django_on_postgres, production_environment, sizes
from _world import audited_hit, table

VARIANTS = ("prepared", "client-bound")


def on_cpu(pid: int) -> int:
    """Nanoseconds process `pid` has run on a CPU (Linux: /proc/<pid>/schedstat)."""
    with open(f"/proc/{pid}/schedstat") as stat:
        return int(stat.read().split()[0])


@contextlib.contextmanager
def client_bound() -> Iterator[None]:
    """While entered, every prepared read runs on Django's own cursor (parameters quoted into
    the statement's text on the client), as before `_Preparing`."""
    from core import prepared

    cursor = prepared._Preparing.cursor
    prepared._Preparing.cursor = lambda self: self._wrapped.cursor()
    try:
        yield
    finally:
        prepared._Preparing.cursor = cursor


def main(iterations: int, warmup: int) -> None:
    from django.db import connection
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from audit.chain import chain_tip
    from campaigns.selectors import campaign_get_for_member, turn_get
    from campaigns.services import turn_create

    campaign, owner, monster = table("server-prepared")
    token = Token.objects.create(user=owner).key
    client = Client(HTTP_AUTHORIZATION=f"Token {token}", HTTP_HOST="127.0.0.1")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()

    def played() -> int:
        turn = turn_create(campaign=campaign, actor=owner, message="I attack.")
        audited_hit(campaign, owner, monster, turn=turn)
        return turn.pk

    turns = [played() for _ in range(2 * (iterations + warmup))]
    latest = turns[-1]

    def undo() -> None:
        url = f"/api/campaigns/{campaign.pk}/turns/{turns.pop()}/undo/"
        response = client.post(url, data=b"{}", content_type="application/json")
        assert response.status_code == 200 and len(response.json()["reverted"]) == 1, response

    calls: dict[str, Callable[[], Any]] = {
        "undo (REST)": undo,
        "member's campaign": lambda: campaign_get_for_member(campaign_id=campaign.pk, user=owner),
        "turn": lambda: turn_get(campaign=campaign, turn_id=latest),
        "chain tip": lambda: chain_tip(campaign.pk),
    }
    figures = {}
    for name, call in calls.items():
        samples: dict[str, dict[str, list[float]]] = {
            v: {"wall": [], "app CPU": [], "PostgreSQL CPU": []} for v in VARIANTS
        }
        for i in range(iterations + warmup):
            order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                with client_bound() if variant == "client-bound" else contextlib.nullcontext():
                    wall, app, pg = time.perf_counter_ns(), time.thread_time_ns(), on_cpu(backend)
                    call()
                    pg, app = on_cpu(backend) - pg, time.thread_time_ns() - app
                    wall = time.perf_counter_ns() - wall
                if i >= warmup:
                    for measure, ns in (("wall", wall), ("app CPU", app), ("PostgreSQL CPU", pg)):
                        samples[variant][measure].append(ns / 1e6)
        figures[name] = {
            v: {m: statistics.median(xs) for m, xs in by.items()} for v, by in samples.items()
        }

    print(
        f"{iterations} calls of each variant (+{warmup} warm-up), alternating; PostgreSQL, "
        "production settings; medians in ms"
    )
    measures = ("wall", "app CPU", "PostgreSQL CPU")
    print(f"{'':18} {'variant':13}" + "".join(f" {m:>15}" for m in measures))
    for name, by in figures.items():
        for variant in VARIANTS:
            print(
                f"{name:18} {variant:13}" + "".join(f" {by[variant][m]:>15.3f}" for m in measures)
            )
    print("ratio client-bound / prepared (above 1: preparing on the server saves)")
    for name, by in figures.items():
        ratios = ", ".join(
            f"{m} {by['client-bound'][m] / by['prepared'][m]:.2f}x"
            for m in measures
            if by["prepared"][m]
        )
        print(f"{name:18} {ratios}")


if __name__ == "__main__":
    run = sizes(
        __doc__, full={"iterations": 300, "warmup": 30}, smoke={"iterations": 5, "warmup": 2}
    )

    production_environment()
    with django_on_postgres("server_prepared"):
        main(**run)
