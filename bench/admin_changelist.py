"""The invocation changelist at 1,000,000 log rows on PostgreSQL, against 1,000 (SPEC §9,
issue 5: "renders in under a second").

One run, one database of its own (`bench_admin`, dropped and created anew): the log is filled
to 1,000 rows and every page below is timed, then filled to 1,000,000 rows with the same shape
and timed again. Each figure is the median wall time of a full render through Django's test
client (session, permissions, filters, count, the page, the template), signed in as a
superuser. A benchmark, not a test: it asserts nothing.

    .venv/bin/python bench/admin_changelist.py [big_rows] [rounds]
"""

import statistics
import sys
import time

from _setup import django_on_postgres

CAMPAIGNS = 40
TOOLS = (
    ("modify_creature", "critical"),
    ("start_combat", "critical"),
    ("end_adventure", "critical"),
    ("end_combat", "high"),
    ("advance_chapter", "high"),
    ("consume_resource", "high"),
    ("rest", "high"),
    ("activate_dungeon", "high"),
    ("advance_turn", "medium"),
    ("reveal_fog", "medium"),
    ("write_memory", "medium"),
    ("spawn_creature", "medium"),
    ("give_item", "medium"),
    ("set_scene", "low"),
    ("move_token", "low"),
)
MODELS = ("scripted", "claude-sonnet-4-5", "claude-opus-4-1")


def make_campaigns() -> list:
    from django.contrib.auth.models import User

    from campaigns.services import campaign_create

    return [
        campaign_create(owner=User.objects.create_user(f"gm{i:02d}"), name=f"Campaign {i:02d}")
        for i in range(CAMPAIGNS)
    ]


def fill_log(campaigns: list, first: int, last: int) -> None:
    """Append log rows `first`..`last` with one INSERT ... SELECT generate_series. Row g belongs
    to campaign g % 40 with sequence g // 40 + 1; rows are ten seconds apart, the newest now;
    about 90 % committed, 5 % failed, 5 % reverted; three models, two sources; snapshots and
    post-states shaped like a real modify_creature call."""
    from django.db import connection

    from audit.models import ToolInvocation

    ids = ", ".join(f"'{c.pk}'::uuid" for c in campaigns)
    owners = ", ".join(str(c.owner_id) for c in campaigns)
    names = ", ".join(f"'{name}'" for name, _ in TOOLS)
    tiers = ", ".join(f"'{tier}'" for _, tier in TOOLS)
    models = ", ".join(f"'{m}'" for m in MODELS)
    entity = "'creature:' || mod(g, 97) || '/vitals'"
    vitals = "jsonb_build_object('hp', {}, 'max_hp', 30, 'temp_hp', 0, 'conditions', '[]'::jsonb)"
    before, after = vitals.format(30), vitals.format("30 - mod(g, 9)")
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {ToolInvocation._meta.db_table}
              (id, campaign_id, user_id, sequence, tool_name, tool_tier, input, result, status,
               error, revertible, revert_snapshot, post_state, write_set, read_set,
               broadcast_events, model, source, created_at, committed_at, revert_reason)
            SELECT gen_random_uuid(),
                   (ARRAY[{ids}])[1 + mod(g, {CAMPAIGNS})],
                   (ARRAY[{owners}])[1 + mod(g, {CAMPAIGNS})],
                   g / {CAMPAIGNS} + 1,
                   (ARRAY[{names}])[1 + mod(g, {len(TOOLS)})],
                   (ARRAY[{tiers}])[1 + mod(g, {len(TOOLS)})],
                   jsonb_build_object('creature_id', mod(g, 97), 'hp_delta', -(mod(g, 9))),
                   jsonb_build_object('hp', 30 - mod(g, 9)),
                   CASE WHEN mod(g, 20) = 0 THEN 'failed' WHEN mod(g, 20) = 1 THEN 'reverted'
                        ELSE 'committed' END,
                   CASE WHEN mod(g, 20) = 0 THEN 'Invalid input: bench' ELSE '' END,
                   true,
                   jsonb_build_object('entities', jsonb_build_object({entity}, {before})),
                   jsonb_build_object({entity}, {after}),
                   jsonb_build_array({entity}), '[]'::jsonb, '[]'::jsonb,
                   (ARRAY[{models}])[1 + mod(g, {len(MODELS)})],
                   CASE WHEN mod(g, 4) = 0 THEN 'api' ELSE 'gm' END,
                   now() - ({last} - g) * interval '10 seconds',
                   now() - ({last} - g) * interval '10 seconds',
                   ''
            FROM generate_series(%s, %s) AS g
            """,
            [first, last],
        )
        cursor.execute(f"VACUUM ANALYZE {ToolInvocation._meta.db_table}")


def pages(campaigns: list) -> dict[str, str]:
    newest = time.gmtime()
    return {
        "unfiltered": "",
        "status=failed": "?status__exact=failed",
        "tier=critical": "?tool_tier__exact=critical",
        "tool=move_token": "?tool=move_token",
        "model=scripted": "?model=scripted",
        "campaign": f"?campaign={campaigns[7].pk}",
        "date: this month": f"?created_at__year={newest.tm_year}&created_at__month={newest.tm_mon}",
        "search: campaign name": "?q=Campaign+07",
        "search: actor": "?q=gm07",
        "page 2": "?p=2",
    }


def measure(client, rounds: int, campaigns: list) -> dict[str, tuple[float, int]]:
    """Median milliseconds and query count of each page."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    base = reverse("admin:audit_toolinvocation_changelist")
    results = {}
    for name, query in pages(campaigns).items():
        client.get(base + query)  # warm the caches like a page served before
        times = []
        for _ in range(rounds):
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                response = client.get(base + query)
                times.append(time.perf_counter() - start)
            assert response.status_code == 200, (name, response.status_code)
        results[name] = (statistics.median(times) * 1000, len(queries))
    return results


def main(big_rows: int, rounds: int) -> None:
    django_on_postgres("bench_admin")
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    settings.DEBUG = False
    campaigns = make_campaigns()
    client = Client()
    client.force_login(User.objects.create_superuser("bench-admin", "a@example.com", "pw"))

    fill_log(campaigns, 1, 1_000)
    small = measure(client, rounds, campaigns)
    started = time.perf_counter()
    fill_log(campaigns, 1_001, big_rows)
    print(f"log grown to {big_rows:,} rows in {time.perf_counter() - started:.1f} s")
    big = measure(client, rounds, campaigns)

    print(f"invocation changelist, median of {rounds} renders (queries per render):")
    print(f"  {'page':<22}{'1,000 rows':>18}{f'{big_rows:,} rows':>22}{'ratio':>9}")
    for name, (ms_small, q_small) in small.items():
        ms_big, q_big = big[name]
        print(
            f"  {name:<22}{ms_small:>10.1f} ms ({q_small:>2}){ms_big:>14.1f} ms ({q_big:>2})"
            f"{ms_big / ms_small:>8.2f}x"
        )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(args[0] if args else 1_000_000, args[1] if len(args) > 1 else 10)
