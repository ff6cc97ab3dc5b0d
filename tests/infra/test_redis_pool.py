"""Django's Redis caches keep their connections open across requests, and their client object
(core/redis_pool.py).

Each request under ASGI has a context of its own, so it gets cache objects of its own; without
one pool per process each of those objects opened a connection to Redis for its first command,
and Django's client made a `redis.Redis` for every command.
"""

from tests.test_settings import python

REQUESTS = """
import asyncio

import django

django.setup()

import redis.connection
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.cache import caches

opened = made = 0
connect = redis.connection.Connection._connect
init = redis.Redis.__init__


def counted(self):
    global opened
    opened += 1
    return connect(self)


def made_one(self, *args, **kwargs):
    global made
    made += 1
    return init(self, *args, **kwargs)


redis.connection.Connection._connect = counted
redis.Redis.__init__ = made_one


def view():
    caches["fragments"].set("pool-test", "drawn", 30)
    assert caches["fragments"].get("pool-test") == "drawn"
    caches["default"].get("pool-test")


async def request():  # as Django's ASGIHandler serves one: a context and a thread of its own
    async with ThreadSensitiveContext():
        await sync_to_async(view)()


for _ in range(20):
    asyncio.run(request())
print(opened, made)
"""


def test_requests_one_after_another_share_one_redis_connection_and_client():
    result = python("-c", REQUESTS, PYTHONPATH=".")
    assert result.returncode == 0, result.stderr
    # was 40 and 60: two caches, a connection each per request, a client per command
    assert result.stdout.split() == ["1", "1"]
