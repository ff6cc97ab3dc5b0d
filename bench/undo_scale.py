"""Undo at scale, measured side by side in one run on PostgreSQL:

1. undo latency of a fresh three-call turn in a campaign whose log holds 1,000,000 rows against
   one holding 1,000 (same table, alternating runs): the conflict check is an index range scan,
   so the ratio should stay near 1;
2. N concurrent undos (threads, one connection each) of distinct turns, in ONE campaign (they
   serialise on its row lock) and spread over N campaigns (they do not).

    .venv/bin/python bench/undo_scale.py [big_rows] [rounds]

A benchmark, not a test: it asserts nothing.
"""

import statistics
import sys
import threading
import time
import uuid

from _setup import django_on_postgres


def fill_log(campaign, user, creature_ids: list[int], rows: int) -> None:
    """Append `rows` committed invocations (and their write-set entries) with one SQL statement
    each, shaped like real move_token calls, without going through Python per row."""
    from django.db import connection

    from audit.models import ToolInvocation, WriteSetEntry

    ids = ",".join(map(str, creature_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {ToolInvocation._meta.db_table}
              (id, campaign_id, user_id, sequence, tool_name, tool_tier, input, result, status,
               error, revertible, revert_snapshot, post_state, write_set, read_set,
               broadcast_events, model, source, created_at, committed_at, revert_reason)
            SELECT gen_random_uuid(), %(campaign)s, %(user)s, g, 'move_token', 'low',
                   jsonb_build_object('creature_id', c, 'x', g %% 50, 'y', 1), '{{}}'::jsonb,
                   'committed', '', true, '{{"entities": {{}}}}'::jsonb, '{{}}'::jsonb,
                   jsonb_build_array('creature:' || c || '/position'), '[]'::jsonb, '[]'::jsonb,
                   'bench', 'bench', now(), now(), ''
            FROM generate_series(1, %(rows)s) AS g,
                 LATERAL (SELECT (ARRAY[{ids}])[1 + g %% {len(creature_ids)}] AS c) AS pick
            """,
            {"campaign": campaign.pk, "user": user.pk, "rows": rows},
        )
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
    campaign = campaign_create(owner=owner, name=name)
    creatures = [
        creature_create(campaign=campaign, name=f"c{i}", kind="monster", hp=50, max_hp=50)
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
        invocation_dispatch(campaign=campaign, actor=owner, tool_name=tool, input=data, turn=turn)
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
    """Wall time for n threads each undoing its own turn at once."""
    from django.db import connection

    from audit.services import turn_undo

    turns = [(table, play_turn(*table, slot=i)) for i, table in enumerate(tables)]
    barrier = threading.Barrier(n + 1)

    def work(table, turn) -> None:
        barrier.wait()
        turn_undo(campaign_id=table[0].pk, turn_id=turn.pk, user=table[1])
        connection.close()

    threads = [threading.Thread(target=work, args=pair) for pair in turns]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def main(big_rows: int, rounds: int) -> None:
    django_on_postgres("bench_undo")
    started = time.perf_counter()
    small = make_table("small", 1_000)
    big = make_table("big", big_rows)
    print(f"log filled: 1,000 and {big_rows:,} rows in {time.perf_counter() - started:.1f} s")

    times: dict[str, list[float]] = {"1K": [], "big": []}
    for _ in range(5):
        timed_undo(*small)
        timed_undo(*big)
    for _ in range(rounds):
        times["1K"].append(timed_undo(*small))
        times["big"].append(timed_undo(*big))
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(
        f"undo of a 3-call turn, median of {rounds}: log of 1,000 rows {med['1K']:.2f} ms, "
        f"log of {big_rows:,} rows {med['big']:.2f} ms, ratio {med['big'] / med['1K']:.2f}x"
    )

    for n in (1, 10, 40):
        one = concurrent_undos([small] * n, n)
        spread = concurrent_undos([make_table(f"spread{n}-{i}", 0) for i in range(n)], n)
        print(
            f"{n:>3} concurrent undos: one campaign {one * 1000:8.1f} ms "
            f"({n / one:6.1f}/s), {n} campaigns {spread * 1000:8.1f} ms ({n / spread:6.1f}/s)"
        )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(args[0] if args else 1_000_000, args[1] if len(args) > 1 else 30)
