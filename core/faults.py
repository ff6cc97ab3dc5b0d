"""Infrastructure faults: the database or the channel layer being unavailable is an outage, not
a bug of ours or of a tool. Every surface answers one the same way (503 with Retry-After), and
the audited dispatch never records one as a tool error.
"""

import sqlite3

from django.db import InterfaceError, OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

RETRY_AFTER_SECONDS = 5
UNAVAILABLE_DETAIL = "The service is temporarily unavailable. Please retry shortly."

# SQLite's primary result codes that mean "not now" rather than "wrong SQL": busy or locked
# past the busy timeout, out of memory, disk I/O, disk full, the file cannot be opened, WAL
# locking protocol. Everything else SQLite calls OperationalError ("no such table", syntax) is
# a bug, as it is on PostgreSQL (ProgrammingError there).
_SQLITE_OUTAGE_CODES = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
    }
)


def is_unavailable(exc: BaseException) -> bool:
    """True for the connectivity kind of error: a refused, dropped or timed-out database
    connection, a pool with no free connection, a server shutting down, a lock or statement
    timeout, a busy SQLite file; Redis (the channel layer) unreachable or timing out. Data
    and programming errors (IntegrityError, DataError, ProgrammingError) stay what they are."""
    if isinstance(exc, RedisConnectionError | RedisTimeoutError):
        return True
    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    cause = exc.__cause__
    if isinstance(cause, sqlite3.Error):
        return getattr(cause, "sqlite_errorcode", 0) & 0xFF in _SQLITE_OUTAGE_CODES
    return True
