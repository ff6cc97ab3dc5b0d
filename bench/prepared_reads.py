"""What compiling a read once saves (core/prepared.py): the campaign page's drawings read through
prepared reads, against the same drawings with every prepared read run as the plain queryset it
is built from, side by side in one run on PostgreSQL.

    .venv/bin/python bench/prepared_reads.py [--smoke] [iterations] [turns] [warmup]

A table as the capacity bench plays it (the owner and four players, their characters and a
goblin, under no approval policy), after `turns` GM turns of the scripted GM. Four measures, each
the CPU time of the thread that draws (what the web process pays; the database's own time is
not in it), the median of `iterations`, the variants alternating call by call: the world dump a
board is drawn from (`campaign_world`: its campaign row, a prepared read, and on PostgreSQL its
tables in one statement of their own, `campaigns.selectors._world_tables`), one turn's feed read
for the GM's sight and a player's (`presenters.feed_read`), and a whole push of the board and of
a turn to the table's five pages (`fragments.pushed_fragments`, its drawings made anew each time:
the fragments cache cleared).
Statements per call are counted too: the same in both variants, since a prepared read runs the
statement its queryset compiles to.
A benchmark, not a test: it asserts no figure, only that both variants draw the same.
"""

import contextlib
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from _setup import django_on_postgres, sizes
from _world import table_of_five

# The fragments cache in the process (locmem), not Redis: each push clears it, to draw anew.
os.environ.pop("REDIS_URL", None)

HEROES = ("Aldric", "Brenna", "Corwin", "Dara")
FRAGMENTS = frozenset({"board", "turn", "roll", "change", "approvals"})


def table(turns: int) -> tuple[Any, Any, list[Any]]:
    """The campaign, its last turn, and each page's (rights, fragments) as a socket holds them."""
    from django.contrib.auth.models import User

    from audit.selectors import viewer_rights
    from campaigns.models import Campaign
    from gm.services import gm_turn_run, turn_submit

    owner = User.objects.create_user("gm")
    players = [User.objects.create_user(f"p{i}") for i in range(len(HEROES))]
    none = Campaign.ApprovalPolicy.NONE
    campaign, _ = table_of_five("bench", owner, players, HEROES, "Goblin", approval_policy=none)
    turn = None
    for i in range(turns):
        turn = turn_submit(
            campaign=Campaign.objects.get(pk=campaign.pk),
            actor=players[i % len(players)],
            message="I attack the goblin, then we take a short rest.",
        )
        gm_turn_run(turn=turn)
    campaign = Campaign.objects.get(pk=campaign.pk)
    pages = [(viewer_rights(campaign=campaign, user=u), FRAGMENTS) for u in [owner, *players]]
    return campaign, turn, pages


def measures(campaign: Any, turn: Any, pages: list[Any]) -> dict[str, Callable[[], Any]]:
    from django.core.cache import caches

    from campaigns.selectors import campaign_world
    from web.pages import fragments, presenters

    def push(changed: dict[Any, int]) -> Any:
        caches["fragments"].clear()
        return fragments.pushed_fragments(campaign_id=campaign.pk, viewers=pages, changed=changed)

    read = presenters.turn_read(campaign=campaign, turn_id=turn.pk)
    sights = [pages[0][0], pages[1][0]]
    return {
        "world dump": lambda: campaign_world(campaign),
        "a turn's feed read": lambda: presenters.feed_read(
            campaign=campaign, viewers=sights, turn=read
        ),
        "a board pushed": lambda: push({"board": 1})[1],
        "a turn pushed": lambda: push({turn.pk: 1})[1],
    }


class Counting:
    """An execute wrapper that counts the statements sent."""

    statements = 0

    def __call__(self, execute: Callable[..., Any], *args: Any) -> Any:
        self.statements += 1
        return execute(*args)


class Plain:
    """While entered, every prepared read runs as the plain queryset it is built from."""

    def __enter__(self) -> None:
        from core.prepared import prepared

        self.call = prepared.__call__
        prepared.__call__ = lambda read, *args: list(read.build(*args))

    def __exit__(self, *exc: Any) -> None:
        from core.prepared import prepared

        prepared.__call__ = self.call


def main(iterations: int, turns: int, warmup: int) -> None:
    from django.db import connection

    campaign, turn, pages = table(turns)
    print(
        f"a table of five after {turns} GM turns; {iterations} calls per variant, alternating; "
        "CPU time of the drawing thread (PostgreSQL's own time not in it)"
    )
    print(f"{'':22} {'prepared ms':>12} {'plain ms':>10} {'plain/prepared':>15} {'statements':>11}")
    for name, measure in measures(campaign, turn, pages).items():
        with Plain():
            plain = measure()
        prepared = measure()
        assert plain == prepared, f"{name}: the variants read or drew differently"
        with connection.execute_wrapper(counting := Counting()):
            measure()
        times: dict[str, list[float]] = {"prepared": [], "plain": []}
        for i in range(warmup + iterations):
            for variant in ("prepared", "plain"):
                with Plain() if variant == "plain" else contextlib.nullcontext():
                    start = time.thread_time()
                    measure()
                    spent = time.thread_time() - start
                if i >= warmup:
                    times[variant].append(spent)
        med = {v: statistics.median(t) * 1000 for v, t in times.items()}
        print(
            f"{name:22} {med['prepared']:>12.2f} {med['plain']:>10.2f}"
            f" {med['plain'] / med['prepared']:>14.2f}x {counting.statements:>11}"
        )


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"iterations": 200, "turns": 12, "warmup": 10},
        smoke={"iterations": 3, "turns": 2, "warmup": 1},
    )
    with django_on_postgres("prepared"):
        main(**run)
