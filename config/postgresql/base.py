"""Django's PostgreSQL backend (psycopg 3 through its connection pool), with a checkout that
survives a restart or a failover of the server: the one change is in `get_new_connection`.

Django hands the pool psycopg_pool's own check when CONN_HEALTH_CHECKS is set, and Django 5.2
refuses any other (`check` in OPTIONS["pool"] reaches ConnectionPool twice: TypeError). That check
loop takes the pool's connections oldest first and sleeps 0, 1, 2, 4 ... s between two that fail
it. A restart ends every idle session at once, so a checkout from an idle pool of n connections
walks all n dead ones, in front of the replacements the pool has already opened, for
2^(n-1) - 1 s: past DB_POOL_TIMEOUT (10 s) from five on, so each request waited 10 s and answered
503 until the dead connections ran out (20 s for a pool a burst had grown to ten).

Here the pool has no check of its own (CONN_HEALTH_CHECKS is off); the checkout checks the
connection it got, with the same one round trip. The first dead one means the server ended every
session it held: the pool's `check()` then tries each idle connection once, without waiting
(a dead one fails at once), and replaces every dead one; the checkout takes the next connection,
a live one or a replacement as soon as it connects.
"""

from typing import Any

import psycopg
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> psycopg.Connection:
        connection = super().get_new_connection(conn_params)
        if self.pool is None or alive(connection):
            return connection
        self.pool.putconn(connection)  # broken: the pool discards it and opens another
        self.pool.check()
        return super().get_new_connection(conn_params)


def alive(connection: psycopg.Connection) -> bool:
    """One empty statement's round trip: the check psycopg_pool runs at checkout."""
    try:
        ConnectionPool.check_connection(connection)
    except psycopg.Error:
        return False
    return True
