"""Analytics at 1,000,000 log rows on PostgreSQL, side by side with 1,000 (issue 11: "p95 ≤ 100 ms
at 1,000,000 log rows").

One run, one database of its own (`bench_analytics_<random>`, dropped at the end): the log is
filled to 1,000 rows shaped as in `admin_changelist.py` (40 campaigns, 15 tools, three models,
about 5 % failed and 5 % reverted, ten seconds apart), every question below is timed, then the
log is grown to 1,000,000 rows and the same questions are timed again. Each figure is the p95 of
`rounds` timings of the real endpoint through DRF's test client (authentication, permission,
the grouped queries, the serializer) or of the adaptive rule's selector; the plan of each query
is printed once at 1,000,000 rows, so an index that stops being used shows.
A benchmark, not a test: it asserts no figure, only that every answer is what it should be.

    .venv/bin/python bench/analytics_scale.py [--smoke] [big_rows] [rounds] [small_rows]
                                              [warmup]
"""

import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from _setup import django_on_postgres, sizes
from admin_changelist import fill_log, make_campaigns

URL = "/api/analytics/tools/"
GOAL_MS = 100


def questions(campaigns: list, staff: Any) -> dict[str, Callable[[], Any]]:
    """Each question as a call returning what it answered."""
    from django.utils import timezone
    from rest_framework.test import APIClient

    from audit.approval import adaptive_approval_reason
    from campaigns.services import campaign_create

    owner, staffer = APIClient(), APIClient()
    owner.force_authenticate(campaigns[7].owner)
    staffer.force_authenticate(staff)
    day = (timezone.now() - timedelta(days=1)).isoformat()
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

    return {
        "owner: one campaign": get(owner, campaign=one),
        "owner: one campaign, last day": get(owner, campaign=one, since=day),
        "owner: all they own": get(owner),
        "staff: every campaign, last day": get(staffer, since=day),
        "staff: the whole log": get(staffer),
        "adaptive rule: campaign": lambda: adaptive_approval_reason(
            campaigns[7], "claude-sonnet-4-5", "move_token"
        ),
        "adaptive rule: across tables": lambda: adaptive_approval_reason(
            newcomer, "claude-sonnet-4-5", "move_token"
        ),
    }


def p95(samples: list[float]) -> float:
    return (
        statistics.quantiles(samples, n=20, method="inclusive")[18]
        if len(samples) > 1
        else samples[0]
    )


def measure(asked: dict[str, Callable[[], Any]], rounds: int, warmup: int) -> dict[str, float]:
    """p95 milliseconds of each question."""
    results = {}
    for name, ask in asked.items():
        for _ in range(warmup):
            ask()
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            ask()
            times.append(time.perf_counter() - start)
        results[name] = p95(times) * 1000
    return results


def check_counts(campaigns: list) -> None:
    """The endpoint's figures for one campaign equal a plain count of its rows."""
    from collections import Counter

    from audit.analytics import tool_stats
    from audit.models import ToolInvocation

    rows = ToolInvocation.objects.filter(campaign=campaigns[7])
    expected = Counter(rows.values_list("model", "tool_name", "status"))
    for row in tool_stats(campaign_ids=[campaigns[7].pk]):
        pair = (row["model"], row["tool_name"])
        assert row["calls"] == sum(n for key, n in expected.items() if key[:2] == pair), pair
        assert row["reverted"] == expected[(*pair, "reverted")], pair
        assert row["failed"] == expected[(*pair, "failed")], pair


def explain(campaigns: list) -> None:
    """The plan of the grouped counts, one campaign and the whole log."""
    from django.db.models import Count

    from audit.analytics import _log, _status_counts

    for label, ids in (("one campaign", [campaigns[7].pk]), ("whole log", None)):
        query = (
            _log(campaign_ids=ids, since=None)
            .values("model", "tool_name")
            .annotate(calls=Count("status"), **_status_counts())
            .order_by("model", "tool_name")
        )
        plan = query.explain(analyze=True)
        nodes = [
            line.strip() for line in plan.splitlines() if "Scan" in line or "Execution" in line
        ]
        print(f"  plan, {label}: " + " | ".join(nodes))


def main(big_rows: int, rounds: int, small_rows: int, warmup: int) -> None:
    from django.conf import settings
    from django.contrib.auth.models import Permission, User

    settings.DEBUG = False
    campaigns = make_campaigns()
    staff = User.objects.create_user("bench-staff", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="revert_toolinvocation"))
    staff = User.objects.get(pk=staff.pk)
    asked = questions(campaigns, staff)

    fill_log(campaigns, 1, small_rows)
    check_counts(campaigns)
    small = measure(asked, rounds, warmup)
    started = time.perf_counter()
    fill_log(campaigns, small_rows + 1, big_rows)
    print(f"log grown to {big_rows:,} rows in {time.perf_counter() - started:.1f} s")
    check_counts(campaigns)
    big = measure(asked, rounds, warmup)

    print(f"analytics, p95 of {rounds} answers (goal at {big_rows:,} rows: {GOAL_MS} ms):")
    print(f"  {'question':<34}{f'{small_rows:,} rows':>14}{f'{big_rows:,} rows':>18}{'ratio':>9}")
    for name, ms_small in small.items():
        ms_big = big[name]
        print(f"  {name:<34}{ms_small:>11.1f} ms{ms_big:>15.1f} ms{ms_big / ms_small:>8.2f}x")
    explain(campaigns)


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"big_rows": 1_000_000, "rounds": 40, "small_rows": 1_000, "warmup": 3},
        smoke={"big_rows": 2_000, "rounds": 3, "small_rows": 200, "warmup": 0},
    )
    with django_on_postgres("analytics"):
        main(**run)
