"""Fault injection: the database connection failing at a chosen query, as a dropped connection
or a killed backend makes it fail; PostgreSQL ending sessions, as a restart does."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import OperationalError, connection

from tests.processes import database_environment


@contextmanager
def database_drops_at(
    fragment: str,
    *,
    message: str = "server closed the connection unexpectedly",
    raise_as: type[Exception] = OperationalError,
) -> Iterator[list[str]]:
    """Every query of this connection whose SQL contains `fragment` raises OperationalError
    before it reaches the server; the list collects those queries, so a test can show that
    the fault really struck."""
    struck: list[str] = []

    def fail(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if fragment in sql:
            struck.append(sql)
            raise raise_as(message)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail):
        yield struck


def terminate_backends(application_name: str) -> int:
    """PostgreSQL ends every session of this test database named `application_name`, as a
    restart or a failover ends them all, over a connection of its own (not one of the pools'):
    how many it ended, each one gone once this returns."""
    with psycopg.connect(database_environment()["DATABASE_URL"], autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = %s",
            [application_name],
        ).fetchone()
    return ended[0]
