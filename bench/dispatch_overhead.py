"""What the write-ahead log costs: an audited `modify_creature` against the same mutation done
bare (lock, read, write, commit), measured side by side in one run on PostgreSQL.

    .venv/bin/python bench/dispatch_overhead.py [--smoke] [iterations] [warmup]

The two variants alternate call by call so machine noise hits both alike; the ratio of medians
is the figure to read. Between two timed calls, untimed, the audited call's events are sent: the
publisher loop's work, which the caller does not wait for, lands in no other call's time.
Settings are production's (bench/_setup.py's `production_environment`: DEBUG off, real keys,
the Redis channel layer): under DEBUG, Django's query log costs the audited call's statements
more than the bare write's, and events go through another channel layer.
A benchmark, not a test: it asserts no figure, only that every step did what it should.
"""

import statistics
import time

from _setup import django_on_postgres, production_environment, sizes
from _world import audited_hit, table


def main(iterations: int, warmup: int) -> None:
    from django.db import transaction

    from campaigns import realtime
    from campaigns.models import Campaign, Creature

    campaign, owner, target = table("bench")

    def audited() -> None:
        audited_hit(campaign, owner, target)

    def bare() -> None:  # lock the campaign row, read the creature, lower its HP
        with transaction.atomic():
            Campaign.objects.select_for_update().get(pk=campaign.pk)
            creature = Creature.objects.get(campaign=campaign, pk=target.pk)
            creature.hp = max(0, creature.hp - 1)
            creature.save(update_fields=["hp"])

    timings: dict[str, list[float]] = {"audited": [], "bare": []}
    for _ in range(warmup):  # warm connections and caches
        audited()
        bare()
    for _ in range(iterations):
        for name, fn in (("audited", audited), ("bare", bare)):
            start = time.perf_counter()
            fn()
            timings[name].append(time.perf_counter() - start)
            realtime.flush()  # untimed: the audited call's events sent (the docstring)

    med = {name: statistics.median(values) * 1000 for name, values in timings.items()}
    p95 = {name: statistics.quantiles(v, n=20)[18] * 1000 for name, v in timings.items()}
    print(f"iterations per variant: {iterations} (PostgreSQL, alternating)")
    print(f"bare mutation     median {med['bare']:.3f} ms   p95 {p95['bare']:.3f} ms")
    print(f"audited dispatch  median {med['audited']:.3f} ms   p95 {p95['audited']:.3f} ms")
    print(f"ratio audited/bare (median): {med['audited'] / med['bare']:.2f}x")


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"iterations": 500, "warmup": 20},
        smoke={"iterations": 5, "warmup": 1},
    )

    production_environment()
    with django_on_postgres("dispatch"):
        main(**run)
