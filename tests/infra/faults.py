"""Fault injection: the database connection failing at a chosen query, as a dropped connection
or a killed backend makes it fail."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import OperationalError, connection


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
