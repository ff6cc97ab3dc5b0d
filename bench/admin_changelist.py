"""The invocation changelist at 1,000,000 log rows on PostgreSQL, against 1,000
(docs/performance.md, issue 5: "renders in under a second").

One run, one database of its own (`bench_admin_<random>`, dropped at the end): the log is filled
to 1,000 valid rows (numbered, chained, sealed; `verify_log` walks them at the end) and every
page below is timed, then filled to 1,000,000 rows with the same shape and timed again. Each
figure is the median wall time of a full render through Django's test client (session,
permissions, filters, count, the page, the template), signed in as a superuser.
A benchmark, not a test: it asserts no figure, only that every step did what it should.

    .venv/bin/python bench/admin_changelist.py [--smoke] [big_rows] [rounds] [small_rows]
                                               [warmup]
"""

import statistics
import time
from datetime import datetime, timedelta

from _log import log_append, log_verify
from _setup import django_on_postgres, sizes

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
        campaign_create(
            owner=User.objects.create_user(f"gm{i:02d}"),
            name=f"Campaign {i:02d}",
            approval_policy="none",
        )
        for i in range(CAMPAIGNS)
    ]


def fill_log(campaigns: list, first: int, last: int) -> None:
    """Append log rows `first`..`last`, numbered, chained and sealed as the dispatch would. Row g
    belongs to campaign g % 40; rows are ten seconds apart, the newest now; about 90 % committed,
    5 % failed, 5 % reverted; three models, two sources; snapshots and post-states shaped like a
    real modify_creature call."""
    from django.db import connection
    from django.utils import timezone

    from audit.models import ToolInvocation

    now = timezone.now()
    log_append(
        _row(campaigns, g, now - (last - g) * timedelta(seconds=10)) for g in range(first, last + 1)
    )
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {ToolInvocation._meta.db_table}")


def _row(campaigns: list, g: int, at: datetime):
    from audit.models import ToolInvocation

    campaign = campaigns[g % CAMPAIGNS]
    tool_name, tier = TOOLS[g % len(TOOLS)]
    entity = f"creature:{g % 97}/vitals"
    hp = 30 - g % 9
    status = {0: "failed", 1: "reverted"}.get(g % 20, "committed")
    return ToolInvocation(
        campaign_id=campaign.pk,
        user_id=campaign.owner_id,
        tool_name=tool_name,
        tool_tier=tier,
        input={"creature_id": g % 97, "hp_delta": -(g % 9)},
        result={"hp": hp},
        status=status,
        error="Invalid input: bench" if status == "failed" else "",
        revertible=True,
        revert_snapshot={"entities": {entity: _vitals(30)}},
        post_state={entity: _vitals(hp)},
        write_set=[entity],
        model=MODELS[g % len(MODELS)],
        source="api" if g % 4 == 0 else "gm",
        created_at=at,
        committed_at=at,
    )


def _vitals(hp: int) -> dict:
    return {"hp": hp, "max_hp": 30, "temp_hp": 0, "conditions": []}


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


def measure(client, rounds: int, warmup: int, campaigns: list) -> dict[str, tuple[float, int]]:
    """Median milliseconds and query count of each page."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    base = reverse("admin:audit_toolinvocation_changelist")
    results = {}
    for name, query in pages(campaigns).items():
        for _ in range(warmup):  # warm the caches like a page served before
            client.get(base + query)
        times = []
        for _ in range(rounds):
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                response = client.get(base + query)
                times.append(time.perf_counter() - start)
            assert response.status_code == 200, (name, response.status_code)
        results[name] = (statistics.median(times) * 1000, len(queries))
    return results


def main(big_rows: int, rounds: int, small_rows: int, warmup: int) -> None:
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    settings.DEBUG = False
    campaigns = make_campaigns()
    client = Client()
    client.force_login(User.objects.create_superuser("bench-admin", "a@example.com", "pw"))

    fill_log(campaigns, 1, small_rows)
    small = measure(client, rounds, warmup, campaigns)
    started = time.perf_counter()
    fill_log(campaigns, small_rows + 1, big_rows)
    print(f"log grown to {big_rows:,} rows in {time.perf_counter() - started:.1f} s")
    big = measure(client, rounds, warmup, campaigns)

    print(f"invocation changelist, median of {rounds} renders (queries per render):")
    print(f"  {'page':<22}{f'{small_rows:,} rows':>18}{f'{big_rows:,} rows':>22}{'ratio':>9}")
    for name, (ms_small, q_small) in small.items():
        ms_big, q_big = big[name]
        print(
            f"  {name:<22}{ms_small:>10.1f} ms ({q_small:>2}){ms_big:>14.1f} ms ({q_big:>2})"
            f"{ms_big / ms_small:>8.2f}x"
        )
    log_verify()


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"big_rows": 1_000_000, "rounds": 10, "small_rows": 1_000, "warmup": 1},
        smoke={"big_rows": 2_000, "rounds": 1, "small_rows": 200, "warmup": 0},
    )
    with django_on_postgres("admin"):
        main(**run)
