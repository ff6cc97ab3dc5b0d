"""One Redis connection pool per process for Django's Redis caches.

Django keeps a cache object per request context (`django.core.cache.caches` is an asgiref
Local), and under ASGI every request has a context of its own: each request made a new
`RedisCache`, a new connection pool and so a new TCP connection (and its handshake) to Redis,
for one GET. `ProcessConnectionPool` hands every cache object of a process the same pool for
the same server and options, so requests borrow connections kept open instead. redis-py's pool
notices a fork and starts afresh in the child.
"""

import threading
from typing import Any

import redis

_pools: dict[tuple[str, str], redis.ConnectionPool] = {}
_guard = threading.Lock()


class ProcessConnectionPool(redis.ConnectionPool):
    """The `pool_class` of Django's Redis caches (their OPTIONS): one pool per process for a
    server URL and its options."""

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> redis.ConnectionPool:
        key = (url, repr(sorted(kwargs.items())))
        with _guard:
            pool = _pools.get(key)
            if pool is None:
                pool = _pools[key] = super().from_url(url, **kwargs)
            return pool
