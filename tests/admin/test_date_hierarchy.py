"""The date drill-down: calendar periods between the first and last row, no SELECT DISTINCT."""

from datetime import UTC, datetime, timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import ToolInvocation
from tests.admin.conftest import CHANGELIST, move
from web.templatetags.audit_admin import calendar_periods


def at(*args):
    return datetime(*args, tzinfo=UTC)


def test_calendar_periods_cover_the_range_with_both_ends():
    first, last = at(2025, 11, 30, 22), at(2026, 2, 1, 3)
    assert [d.year for d in calendar_periods(first, last, "year")] == [2025, 2026]
    assert [(d.year, d.month) for d in calendar_periods(first, last, "month")] == [
        (2025, 11),
        (2025, 12),
        (2026, 1),
        (2026, 2),
    ]
    days = calendar_periods(at(2026, 2, 27, 23), at(2026, 3, 2, 1), "day")
    assert [(d.month, d.day) for d in days] == [(2, 27), (2, 28), (3, 1), (3, 2)]


def test_the_list_drills_down_without_reading_every_row(staff_client, world):
    rows = [move(world, x) for x in range(3)]
    start = at(2026, 3, 30, 12)
    for n, row in enumerate(rows):  # 30 March, 2 April, 5 April
        ToolInvocation.objects.filter(pk=row.pk).update(created_at=start + timedelta(days=3 * n))
    with CaptureQueriesContext(connection) as queries:
        top = staff_client.get(CHANGELIST).content.decode()
    assert not any("DISTINCT" in q["sql"] for q in queries.captured_queries)
    assert "created_at__month=3" in top and "created_at__month=4" in top
    april = staff_client.get(CHANGELIST, {"created_at__year": 2026, "created_at__month": 4})
    html = april.content.decode()
    assert [f"created_at__day={d}" in html for d in (1, 2, 3, 4, 5, 6)] == [
        False,
        True,
        True,
        True,
        True,
        False,
    ]
    assert {r.pk for r in april.context["cl"].result_list} == {rows[1].pk, rows[2].pk}
