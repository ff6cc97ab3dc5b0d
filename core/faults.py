"""Infrastructure faults: the database or the channel layer being unavailable is an outage, not
a bug of ours or of a tool. Every surface answers one the same way (503 with Retry-After), and
the audited dispatch never records one as a tool error.
"""

from django.db import InterfaceError, OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

RETRY_AFTER_SECONDS = 5
UNAVAILABLE_DETAIL = "The service is temporarily unavailable. Please retry shortly."


def is_unavailable(exc: BaseException) -> bool:
    """True for the connectivity kind of error: a refused, dropped or timed-out database
    connection, a pool with no free connection, a server shutting down, a lock or statement
    timeout; Redis (the channel layer) unreachable or timing out. Data and programming errors
    (IntegrityError, DataError, ProgrammingError) stay what they are."""
    return isinstance(
        exc, RedisConnectionError | RedisTimeoutError | OperationalError | InterfaceError
    )
