"""One Redis connection pool, and one client on it, per process for Django's Redis caches.

Django keeps a cache object per request context (`django.core.cache.caches` is an asgiref
Local), and under ASGI every request has a context of its own: each request made a new
`RedisCache`, a new connection pool and so a new TCP connection (and its handshake) to Redis,
for one GET. `ProcessConnectionPool` hands every cache object of a process the same pool for
the same server and options, so requests borrow connections kept open instead. redis-py's pool
notices a fork and starts afresh in the child.

Django's client also builds a `redis.Redis` object for every command it sends (its
`get_client`), which cost more than the command's own round trip on the pages' hot path
(docs/performance.md): `RedisCache` keeps one client per pool instead. A `redis.Redis` holds no
connection of its own (each command borrows one from the pool), so threads share it safely.
"""

import threading
from typing import Any

import redis
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient

_pools: dict[tuple[str, str], redis.ConnectionPool] = {}
_clients: dict[int, redis.Redis] = {}  # by id() of a pool of `_pools`, which lives as long
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


class ProcessCacheClient(RedisCacheClient):
    """Django's Redis cache client, with one `redis.Redis` per connection pool."""

    def get_client(self, key: Any = None, *, write: bool = False) -> redis.Redis:
        pool = self._get_connection_pool(write)
        client = _clients.get(id(pool))
        if client is None or client.connection_pool is not pool:
            with _guard:
                client = _clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    """The `BACKEND` of the Redis caches: Django's, on `ProcessCacheClient`."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ProcessCacheClient
