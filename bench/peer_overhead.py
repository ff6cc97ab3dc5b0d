"""What recording a write costs, next to the libraries users compare us with: the same write (lock
the campaign row, read a creature, lower its HP, commit) done bare, through
django-simple-history, django-pghistory and django-reversion, and through the audited dispatch
(`modify_creature`), alternating call by call in one run on PostgreSQL.

    .venv/bin/python bench/peer_overhead.py [--smoke] [iterations] [warmup]

The peers each write a throwaway copy of a creature's vitals (the bench-only `peers` app,
installed by `peers.settings` with the three libraries, set up as their docs say), and so does
"bare, peers' table", recorded by nothing; bare and audited write the project's own creature.
`ratio` is a variant's median over the median of the bare write on the same table: the peers'
over "bare, peers' table", ours over "bare". `statements` counts the SQL statements the client
sends for one write (BEGIN and COMMIT included; a trigger's insert runs inside the server and is
not one). Each round runs every variant once, starting from a different one each round, so
machine noise hits all alike. Settings are production's, as in bench/dispatch_overhead.py.
A benchmark, not a test: it asserts no figure, only that every step did what it should.
"""

import os
import statistics
import time
from collections.abc import Callable

from _setup import django_on_postgres, production_environment, sizes
from _world import audited_hit, bare_hit, table

RECORDS = {
    "bare": "nothing",
    "bare, peers' table": "nothing",
    "django-simple-history": "the full row after the write (post_save)",
    "django-pghistory": "the row after the write (trigger)",
    "django-reversion": "the serialized object + a revision row",
    "audited dispatch": "pre-state, post-state, write/read set, hash chain, events",
}


def variants() -> dict[str, Callable[[], None]]:
    """Each variant's write, on a table of its own in one campaign."""
    import reversion
    from django.db import transaction
    from peers.models import (
        PgHistoryCreature,
        PlainCreature,
        ReversionCreature,
        SimpleHistoryCreature,
    )

    from campaigns.models import Creature

    campaign, owner, target = table("bench")
    vitals = {"name": "Dummy", "hp": target.hp, "max_hp": target.max_hp}

    def tracked(model: type) -> Callable[[], None]:
        pk = model.objects.create(campaign=campaign, **vitals).pk

        def tracked_write() -> None:
            with transaction.atomic():
                bare_hit(campaign, model, pk)

        return tracked_write

    def bare() -> None:
        with transaction.atomic():
            bare_hit(campaign, Creature, target.pk)

    reversion_pk = ReversionCreature.objects.create(campaign=campaign, **vitals).pk

    def reversioned() -> None:
        with transaction.atomic(), reversion.create_revision():
            bare_hit(campaign, ReversionCreature, reversion_pk)

    def audited() -> None:
        audited_hit(campaign, owner, target)

    return {
        "bare": bare,
        "bare, peers' table": tracked(PlainCreature),
        "django-simple-history": tracked(SimpleHistoryCreature),
        "django-pghistory": tracked(PgHistoryCreature),
        "django-reversion": reversioned,
        "audited dispatch": audited,
    }


def recorded() -> dict[str, int]:
    """How many records each variant left: every write must have been recorded."""
    from peers.models import PgHistoryCreature, ReversionCreature, SimpleHistoryCreature
    from reversion.models import Version

    from audit.models import ToolInvocation

    return {
        "django-simple-history": SimpleHistoryCreature.history.filter(history_type="~").count(),
        "django-pghistory": PgHistoryCreature.pgh_event_model.objects.filter(
            pgh_label="update"
        ).count(),
        "django-reversion": Version.objects.get_for_model(ReversionCreature).count(),
        "audited dispatch": ToolInvocation.objects.filter(status="committed").count(),
    }


def statements(fn: Callable[[], None]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        fn()
    return len(queries)


def main(iterations: int, warmup: int) -> None:
    from campaigns import realtime

    writes = variants()
    names = list(writes)
    for _ in range(warmup):  # warm connections and caches
        for fn in writes.values():
            fn()
    counts = {name: statements(fn) for name, fn in writes.items()}
    timings: dict[str, list[float]] = {name: [] for name in names}
    for i in range(iterations):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            writes[name]()
            timings[name].append(time.perf_counter() - start)
            realtime.flush()  # untimed: the audited call's events sent (bench/dispatch_overhead.py)
    done = warmup + 1 + iterations
    left = recorded()
    assert all(n == done for n in left.values()), (done, left)

    med = {name: statistics.median(v) * 1000 for name, v in timings.items()}
    p95 = {name: statistics.quantiles(v, n=20)[18] * 1000 for name, v in timings.items()}
    print(f"one write (lock campaign, read creature, lower HP, commit); {iterations} per variant")
    print("PostgreSQL, variants alternating, each write recorded as its library does")
    print(f"{'variant':<22}{'median ms':>10}{'p95 ms':>9}{'statements':>11}{'ratio':>8}  records")
    for name in names:
        base = med["bare"] if name in ("bare", "audited dispatch") else med["bare, peers' table"]
        print(
            f"{name:<22}{med[name]:>10.2f}{p95[name]:>9.2f}{counts[name]:>11}"
            f"{med[name] / base:>7.2f}x  {RECORDS[name]}"
        )
    print("ratio: to the bare write on the same table (ours: the project's creature)")


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"iterations": 500, "warmup": 20},
        smoke={"iterations": 10, "warmup": 2},
    )

    production_environment()
    os.environ["DJANGO_SETTINGS_MODULE"] = "peers.settings"
    with django_on_postgres("peers"):
        main(**run)
