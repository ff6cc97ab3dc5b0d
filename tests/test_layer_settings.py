"""The Redis channel layer's socket timeouts are set from the environment, and a read timeout
that the layer's own blocking read would outlast refuses to start."""

from channels_redis.core import RedisChannelLayer

from tests.test_settings import manage


def test_a_socket_timeout_no_longer_than_the_blocking_read_refuses_to_start():
    result = manage(
        "check",
        REDIS_URL="redis://127.0.0.1:6379/2",
        REDIS_SOCKET_TIMEOUT=str(RedisChannelLayer.brpop_timeout),
    )
    assert result.returncode != 0
    assert "REDIS_SOCKET_TIMEOUT must be longer" in result.stderr


def test_the_layer_gets_the_configured_timeouts():
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        "from channels.layers import get_channel_layer as g; "
        "c = g().create_pool(0).connection_kwargs; "
        "print(c['socket_timeout'], c['socket_connect_timeout'])",
        REDIS_URL="redis://127.0.0.1:6379/2",
        REDIS_SOCKET_TIMEOUT="12.5",
        REDIS_CONNECT_TIMEOUT="3",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["12.5", "3.0"]
