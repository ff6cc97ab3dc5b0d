"""The changelist count: estimated from table statistics on PostgreSQL when unfiltered."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import ToolInvocation
from tests.admin.conftest import move
from web.admin.pagination import EstimatedCountPaginator


class EstimateEverything(EstimatedCountPaginator):
    exact_below = 1


def counted(paginator):
    with CaptureQueriesContext(connection) as queries:
        count = paginator.count
    return count, [q["sql"] for q in queries.captured_queries]


def test_small_tables_are_counted_exactly(world):
    for x in range(3):
        move(world, x)
    count, queries = counted(EstimatedCountPaginator(ToolInvocation.objects.all(), 100))
    assert count == 3 and "COUNT(*)" in queries[-1]


def test_filtered_lists_are_counted_exactly(world):
    for x in range(3):
        move(world, x)
    queryset = ToolInvocation.objects.filter(status="committed")
    count, queries = counted(EstimateEverything(queryset, 100))
    assert count == 3 and len(queries) == 1 and "COUNT(*)" in queries[0]


def test_unfiltered_count_comes_from_the_statistics_on_postgresql(world):
    for x in range(30):
        move(world, x)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE audit_toolinvocation")
    count, queries = counted(EstimateEverything(ToolInvocation.objects.all(), 100))
    assert count == 30
    assert len(queries) == 1 and "pg_class" in queries[0] and "COUNT(*)" not in queries[0]


def test_a_never_analysed_table_is_counted_exactly_on_postgresql(world):
    move(world, 1)
    count, queries = counted(EstimatedCountPaginator(ToolInvocation.objects.all(), 100))
    assert count == 1 and "COUNT(*)" in queries[-1]
