"""Which errors are outages (503, retry) and which are bugs: decided on real errors."""

import socket

import pytest
import redis
from django.db import DatabaseError, connection

from core.faults import is_unavailable


def test_wrong_sql_is_a_bug_not_an_outage(db):
    with pytest.raises(DatabaseError) as caught, connection.cursor() as cursor:
        cursor.execute("SELECT no_such_column FROM campaigns_campaign")
    assert not is_unavailable(caught.value)


def test_an_unreachable_channel_layer_is_an_outage():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    client = redis.Redis(host="127.0.0.1", port=closed_port, socket_connect_timeout=1)
    with pytest.raises(redis.exceptions.RedisError) as caught:
        client.ping()
    assert is_unavailable(caught.value)
