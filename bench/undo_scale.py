"""Undo at scale, measured side by side in one run on PostgreSQL:

1. undo latency of a fresh three-call turn in a campaign whose log holds 1,000,000 rows against
   one holding 1,000 (same table, alternating runs): the conflict check is an index range scan,
   so the ratio should stay near 1;
2. N concurrent undos (threads, one connection each) of distinct turns, in ONE campaign (they
   serialise on its row lock) and spread over N campaigns (they do not);
3. `racers` concurrent undos (threads, one connection each) of ONE turn: exactly one reverts it,
   the others find it already undone; p50/p99 of each request's latency.

The log is filled with valid rows (numbered, chained, sealed) and `verify_log` walks it at the
end, undone turns included.

    .venv/bin/python bench/undo_scale.py [--smoke] [big_rows] [rounds] [small_rows] [warmup]
                                         [racers] [concurrency ...]

A benchmark, not a test: it asserts no figure, only that every step did what it should.
"""

import statistics
import threading
import time
import uuid

from _log import log_append, log_verify
from _setup import django_on_postgres, sizes


def fill_log(campaign, user, creature_ids: list[int], rows: int) -> None:
    """Append `rows` committed invocations shaped like real move_token calls (chained and sealed
    as the dispatch would), then their write-set entries with one SQL statement."""
    from django.db import connection
    from django.utils import timezone

    from audit.models import ToolInvocation, WriteSetEntry

    now = timezone.now()
    log_append(
        ToolInvocation(
            campaign_id=campaign.pk,
            user_id=user.pk,
            tool_name="move_token",
            tool_tier="low",
            input={"creature_id": creature, "x": g % 50, "y": 1},
            result={},
            status=ToolInvocation.Status.COMMITTED,
            revert_snapshot={"entities": {}},
            post_state={},
            write_set=[f"creature:{creature}/position"],
            model="bench",
            source="bench",
            created_at=now,
            committed_at=now,
        )
        for g in range(1, rows + 1)
        for creature in [creature_ids[g % len(creature_ids)]]
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {WriteSetEntry._meta.db_table}
              (campaign_id, invocation_id, sequence, root, key, mode)
            SELECT campaign_id, id, sequence, 'creature:' || (input->>'creature_id'),
                   'creature:' || (input->>'creature_id') || '/position', 'w'
            FROM {ToolInvocation._meta.db_table} WHERE campaign_id = %s
            """,
            [campaign.pk],
        )
        cursor.execute(f"ANALYZE {ToolInvocation._meta.db_table}")
        cursor.execute(f"ANALYZE {WriteSetEntry._meta.db_table}")


def make_table(name: str, log_rows: int):
    from django.contrib.auth.models import User

    from campaigns.services import campaign_create, creature_create

    owner = User.objects.create_user(f"{name}-{uuid.uuid4().hex[:8]}")
    campaign = campaign_create(owner=owner, name=name, approval_policy="none")
    creatures = [
        creature_create(campaign=campaign, by=owner, name=f"c{i}", kind="monster", hp=50, max_hp=50)
        for i in range(120)
    ]
    if log_rows:
        fill_log(campaign, owner, [c.pk for c in creatures], log_rows)
    return campaign, owner, creatures


def play_turn(campaign, owner, creatures, slot: int = 0):
    """Three calls on entities of their own (per `slot`), so concurrent undos do not conflict."""
    from audit.services import invocation_dispatch
    from campaigns.services import turn_create

    turn = turn_create(campaign=campaign, actor=owner, message="bench turn")
    for tool, data in (
        ("modify_creature", {"creature_id": creatures[2 * slot].pk, "hp_delta": -1}),
        ("move_token", {"creature_id": creatures[2 * slot + 1].pk, "x": 3, "y": 3}),
        ("write_memory", {"content": "bench"}),
    ):
        row = invocation_dispatch(
            campaign=campaign, actor=owner, tool_name=tool, input=data, turn=turn
        )
        assert row.status == row.Status.COMMITTED, (tool, row.error)
    return turn


def timed_undo(campaign, owner, creatures) -> float:
    from audit.services import turn_undo

    turn = play_turn(campaign, owner, creatures)
    start = time.perf_counter()
    outcome = turn_undo(campaign_id=campaign.pk, turn_id=turn.pk, user=owner)
    elapsed = time.perf_counter() - start
    assert len(outcome.reverted) == 3, outcome
    return elapsed


def concurrent_undos(tables, n: int) -> float:
    """Wall time for n threads each undoing its own turn at once. A thread's failure, or an undo
    that did not revert its whole turn, fails the run after the others are done."""
    from django.db import connection

    from audit.services import turn_undo

    turns = [(table, play_turn(*table, slot=i)) for i, table in enumerate(tables)]
    barrier = threading.Barrier(n + 1)
    failures: list[BaseException] = []

    def work(table, turn) -> None:
        try:
            barrier.wait()
            outcome = turn_undo(campaign_id=table[0].pk, turn_id=turn.pk, user=table[1])
            assert len(outcome.reverted) == 3, outcome
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=pair) for pair in turns]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return time.perf_counter() - start


def racing_undos(table, racers: int) -> list[float]:
    """`racers` threads undo one turn at once; exactly one must revert it. Each request's
    latency in seconds, from the common start to its answer."""
    from django.db import connection

    from audit.services import turn_undo

    campaign, owner, creatures = table
    turn = play_turn(campaign, owner, creatures)
    barrier = threading.Barrier(racers + 1)
    outcomes: list = []
    latencies: list[float] = []
    failures: list[BaseException] = []

    def race() -> None:
        try:
            barrier.wait()
            outcome = turn_undo(campaign_id=campaign.pk, turn_id=turn.pk, user=owner)
            latencies.append(time.perf_counter() - start)
            outcomes.append(outcome)
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    winners = [o for o in outcomes if o.reverted]
    assert len(winners) == 1 and len(winners[0].reverted) == 3, outcomes
    assert all(
        {s["skip_reason"] for s in o.skipped} == {"already_reverted"}
        for o in outcomes
        if not o.reverted
    ), outcomes
    return latencies


def main(
    small_rows: int,
    big_rows: int,
    rounds: int,
    warmup: int,
    racers: int,
    concurrency: list[int],
) -> None:
    started = time.perf_counter()
    small = make_table("small", small_rows)
    big = make_table("big", big_rows)
    print(
        f"log filled: {small_rows:,} and {big_rows:,} rows in {time.perf_counter() - started:.1f} s"
    )

    times: dict[str, list[float]] = {"small": [], "big": []}
    for _ in range(warmup):
        timed_undo(*small)
        timed_undo(*big)
    for _ in range(rounds):
        times["small"].append(timed_undo(*small))
        times["big"].append(timed_undo(*big))
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(
        f"undo of a 3-call turn, median of {rounds}: log of {small_rows:,} rows "
        f"{med['small']:.2f} ms, log of {big_rows:,} rows {med['big']:.2f} ms, "
        f"ratio {med['big'] / med['small']:.2f}x"
    )

    for n in concurrency:
        one = concurrent_undos([small] * n, n)
        spread = concurrent_undos([make_table(f"spread{n}-{i}", 0) for i in range(n)], n)
        print(
            f"{n:>3} concurrent undos: one campaign {one * 1000:8.1f} ms "
            f"({n / one:6.1f}/s), {n} campaigns {spread * 1000:8.1f} ms ({n / spread:6.1f}/s)"
        )
    latencies = sorted(s * 1000 for s in racing_undos(small, racers))
    p50, p99 = (statistics.quantiles(latencies, n=100, method="inclusive")[q - 1] for q in (50, 99))
    print(
        f"{racers} concurrent undos of one turn: exactly one reverted it; latency p50 "
        f"{p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms"
    )
    log_verify()


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={
            "big_rows": 1_000_000,
            "rounds": 30,
            "small_rows": 1_000,
            "warmup": 5,
            "racers": 32,
            "concurrency": [1, 10, 40],
        },
        smoke={
            "big_rows": 1_000,
            "rounds": 1,
            "small_rows": 100,
            "warmup": 0,
            "racers": 2,
            "concurrency": [2],
        },
    )
    with django_on_postgres("undo"):
        main(**run)
