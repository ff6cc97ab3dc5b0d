"""Analytics at 1,000,000 log rows on PostgreSQL, side by side with 1,000 (issue 11: "p95 ≤ 100 ms
at 1,000,000 log rows"), for every shape of question.

One run, one database of its own (`bench_analytics_<random>`, dropped at the end): the log is
filled to 1,000 rows shaped as in `admin_changelist.py` (40 campaigns, 15 tools, three models,
about 5 % failed and 5 % reverted, ten seconds apart), every question below is timed, then the
log is grown to 1,000,000 rows and the same questions are timed again. The first read after
each fill folds the new rows into the rollup (audit/rollup.py); that one read is timed on its
own ("fold"). Each other figure is the p50 and p95 of `rounds` timings of the real endpoint
through DRF's test client (authentication, permission, the fold check, the sums, the
serializer), of the admin's analytics page, of the day series its chart draws, or of the adaptive
rule's selector; "after new calls" appends 40 calls and reverts 4 (chained transitions) before
each timed read, so each of its reads folds them in. The plan of the whole log's sums is printed
once at 1,000,000 rows. A benchmark, not a test: it asserts no figure, only that every answer
equals a count of the log.

    .venv/bin/python bench/analytics_scale.py [--smoke] [big_rows] [rounds] [small_rows]
                                              [warmup]
"""

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from _setup import django_on_postgres, sizes
from admin_changelist import fill_log, make_campaigns

URL = "/api/analytics/tools/"
GOAL_MS = 100
# A question: the call timed (returns what it answered), and a set-up run untimed before it.
Question = tuple[Callable[[], Any], Callable[[], None]]


def questions(campaigns: list, staff: Any, fresh: Callable[[], None]) -> dict[str, Question]:
    """Each question as (a call returning what it answered, a set-up run untimed before it)."""
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone
    from rest_framework.test import APIClient

    from audit.analytics import revert_rate_by_day
    from audit.policy import adaptive_approval_reason
    from campaigns.services import campaign_create

    owner, staffer, admin = APIClient(), APIClient(), Client()
    owner.force_authenticate(campaigns[7].owner)
    staffer.force_authenticate(staff)
    admin.force_login(staff)
    now = timezone.now()
    day = (now - timedelta(days=1)).isoformat()
    month = now - timedelta(days=30)
    one = str(campaigns[7].pk)
    newcomer = campaign_create(owner=campaigns[7].owner, name="new", approval_policy="adaptive")
    for campaign in (campaigns[7], newcomer):
        campaign.approval_policy = "adaptive"

    def get(client: Any, **query: str) -> Callable[[], Any]:
        def ask() -> Any:
            response = client.get(URL, query)
            assert response.status_code == 200, response.content
            return response.json()

        return ask

    def page() -> Any:
        response = admin.get(reverse("admin:audit_toolinvocation_analytics"), {"days": 30})
        assert response.status_code == 200, response.status_code
        return response.content

    def still() -> None:
        return None

    return {
        "owner: one campaign": (get(owner, campaign=one), still),
        "owner: one campaign, last day": (get(owner, campaign=one, since=day), still),
        "owner: all they own": (get(owner), still),
        "staff: the whole log": (get(staffer), still),
        "staff: whole log, last day": (get(staffer, since=day), still),
        "staff: whole log, 30 days": (get(staffer, since=month.isoformat()), still),
        "staff: whole log after new calls": (get(staffer), fresh),
        "chart: by day, whole log, 30 d": (
            lambda: revert_rate_by_day(campaign_ids=None, since=month),
            still,
        ),
        "chart: by day, whole log, all": (lambda: revert_rate_by_day(), still),
        "chart: by day, one campaign": (
            lambda: revert_rate_by_day(campaign_ids=[campaigns[7].pk], since=month),
            still,
        ),
        "admin analytics page, 30 d": (page, still),
        "adaptive rule: campaign": (
            lambda: adaptive_approval_reason(campaigns[7], "claude-sonnet-4-5", "move_token"),
            still,
        ),
        "adaptive rule: across tables": (
            lambda: adaptive_approval_reason(newcomer, "claude-sonnet-4-5", "move_token"),
            still,
        ),
    }


def new_calls(campaigns: list) -> Callable[[], None]:
    """40 new calls (one per campaign) and 4 reverts of committed calls, as the dispatch and the
    revert append them: the set-up of "after new calls"."""
    from _log import log_append
    from admin_changelist import _row
    from django.db import transaction
    from django.utils import timezone

    from audit.chain import transitions_append
    from audit.models import ToolInvocation
    from audit.services.common import campaign_lock

    counter = [10**9]

    def fresh() -> None:
        now = timezone.now()
        first = counter[0]
        counter[0] += len(campaigns)
        log_append(_row(campaigns, g, now) for g in range(first, counter[0]))
        for campaign in campaigns[2:6]:  # (campaigns 0 and 1 hold only failed and reverted calls)
            with transaction.atomic():
                campaign_lock(campaign.pk)
                row = (
                    ToolInvocation.objects.filter(campaign=campaign, status="committed")
                    .order_by("-sequence")
                    .first()
                )
                row.status = "reverted"
                row.save(update_fields=["status"])
                transitions_append(
                    campaign_id=campaign.pk,
                    changes=[(row, "committed")],
                    by=None,
                    reason="bench",
                    at=now,
                )

    return fresh


def p95(samples: list[float]) -> float:
    return (
        statistics.quantiles(samples, n=20, method="inclusive")[18]
        if len(samples) > 1
        else samples[0]
    )


def measure(asked: dict[str, Question], rounds: int, warmup: int) -> dict[str, tuple]:
    """(p50, p95) milliseconds of each question."""
    results = {}
    for name, (ask, before) in asked.items():
        for _ in range(warmup):
            before()
            ask()
        times = []
        for _ in range(rounds):
            before()
            start = time.perf_counter()
            ask()
            times.append(time.perf_counter() - start)
        results[name] = (statistics.median(times) * 1000, p95(times) * 1000)
    return results


def fold_once() -> float:
    """The first read after a fill: it folds every new row into the rollup (milliseconds)."""
    from audit.analytics import tool_stats

    start = time.perf_counter()
    tool_stats()
    return (time.perf_counter() - start) * 1000


def check_counts(campaigns: list) -> None:
    """The figures (the whole log, one campaign; all time and since a moment inside a day)
    equal a grouped count of the log rows themselves."""
    from datetime import UTC, datetime

    from django.db.models import Count

    from audit.analytics import tool_stats
    from audit.models import ToolInvocation

    newest = ToolInvocation.objects.latest("created_at").created_at
    inside = datetime.combine(newest.date(), datetime.min.time(), tzinfo=UTC) - timedelta(
        hours=17, minutes=13
    )
    for ids in (None, [campaigns[7].pk]):
        for since in (None, inside):
            rows = ToolInvocation.objects.all()
            if ids is not None:
                rows = rows.filter(campaign_id__in=ids)
            if since is not None:
                rows = rows.filter(created_at__gte=since)
            expected: dict[tuple, Counter] = {}
            for g in rows.values("model", "tool_name", "status").annotate(n=Count("pk")):
                expected.setdefault((g["model"], g["tool_name"]), Counter())[g["status"]] = g["n"]
            answer = tool_stats(campaign_ids=ids, since=since)
            assert [(r["model"], r["tool_name"]) for r in answer] == sorted(expected), (ids, since)
            for row in answer:
                n = expected[(row["model"], row["tool_name"])]
                assert row["calls"] == sum(n.values()), (ids, since, row)
                assert (row["reverted"], row["failed"]) == (n["reverted"], n["failed"]), row


def explain() -> None:
    """The plan of the whole log's sums (after the fold: nothing left to fold)."""
    from django.db.models import Sum

    from audit.analytics import _cells

    query = (
        _cells(campaign_ids=None, since=None)
        .values("model", "tool_name")
        .annotate(calls=Sum("calls"), reverted=Sum("reverted"))
        .order_by()
    )
    plan = query.explain(analyze=True)
    nodes = [line.strip() for line in plan.splitlines() if "Scan" in line or "Execution" in line]
    print("  plan, whole log: " + " | ".join(nodes))


def load() -> str:
    import os

    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(big_rows: int, rounds: int, small_rows: int, warmup: int) -> None:
    import platform

    from django.conf import settings
    from django.contrib.auth.models import Permission, User

    from audit.models import ToolDay, ToolDayAll

    settings.DEBUG = False
    campaigns = make_campaigns()
    staff = User.objects.create_user("bench-staff", is_staff=True, is_superuser=True)
    staff.user_permissions.add(Permission.objects.get(codename="revert_toolinvocation"))
    staff = User.objects.get(pk=staff.pk)
    asked = questions(campaigns, staff, new_calls(campaigns))

    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
        f"{os.cpu_count()} cores, load {load()}"
    )
    fill_log(campaigns, 1, small_rows)
    fold_small = fold_once()
    check_counts(campaigns)
    small = measure(asked, rounds, warmup)
    started = time.perf_counter()
    fill_log(campaigns, small_rows + 1, big_rows)
    print(f"log grown to {big_rows:,} rows in {time.perf_counter() - started:.1f} s")
    fold_big = fold_once()
    check_counts(campaigns)
    big = measure(asked, rounds, warmup)
    check_counts(campaigns)
    cells = (ToolDay.objects.count(), ToolDayAll.objects.count())

    print(
        f"analytics, p50 / p95 of {rounds} answers (goal at {big_rows:,} rows: p95 ≤ {GOAL_MS} ms)"
    )
    print(
        f"  {'question':<36}{f'{small_rows:,} rows':>20}{f'{big_rows:,} rows':>22}{'p95 ratio':>11}"
    )
    for name, (p50_small, p95_small) in small.items():
        p50_big, p95_big = big[name]
        print(
            f"  {name:<36}{p50_small:>8.1f} / {p95_small:>6.1f} ms{p50_big:>10.1f} / "
            f"{p95_big:>6.1f} ms{p95_big / p95_small:>10.2f}x"
        )
    print(
        f"  {'fold: first read after the fill':<36}{fold_small:>17.1f} ms{fold_big:>19.1f} ms"
        f"  (once: {big_rows - small_rows:,} new rows)"
    )
    print(f"  rollup cells at {big_rows:,} rows: {cells[0]:,} per campaign, {cells[1]:,} overall")
    print(f"  load after: {load()}")
    explain()


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"big_rows": 1_000_000, "rounds": 40, "small_rows": 1_000, "warmup": 3},
        smoke={"big_rows": 2_000, "rounds": 3, "small_rows": 200, "warmup": 0},
    )
    with django_on_postgres("analytics"):
        main(**run)
