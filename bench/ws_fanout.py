"""Fan-out of an undo: time from the undo's commit to its `interaction_reverted` event reaching
each of N connected websocket clients, N = 10, 50, 200, through channels-redis, with the
in-memory layer measured side by side in the same run as the baseline.

    .venv/bin/python bench/ws_fanout.py [--smoke] [rounds] [N ...]

(REDIS_URL, the channels-redis server, defaults to redis://127.0.0.1:6379/4.)

Clients are Channels `WebsocketCommunicator`s running the project's real ASGI stack (token
auth, membership check, the consumer) in this one process; the undo runs through
`audit.services.turn_undo` on PostgreSQL. The clock starts when the publisher's on-commit send
begins (the undo is durable: no hook can join its transaction from outside), so it measures
commit → publish → layer → consumer → client.
A benchmark, not a test: it asserts no figure, only that every step did what it should.
"""

import asyncio
import os
import statistics
import time
import uuid
from typing import Any

from _setup import django_on_postgres, sizes

LAYERS = ("redis", "in-memory")
TIMEOUT = 30


def use_layer(name: str, redis: dict[str, Any]) -> None:
    """Switch the default layer: the project's channels-redis settings, or the in-memory one."""
    from channels.layers import channel_layers
    from django.conf import settings

    in_memory = {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    settings.CHANNEL_LAYERS = {"default": redis if name == "redis" else in_memory}
    channel_layers.backends = {}


def build_table(clients: int) -> dict[str, Any]:
    """A campaign with `clients` members, each with an API token, and a monster to hit."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from campaigns.models import Membership
    from campaigns.services import campaign_create, creature_create

    tag = uuid.uuid4().hex[:8]
    owner = User.objects.create_user(f"owner-{tag}")
    campaign = campaign_create(owner=owner, name=f"fan-out {clients}")
    players = User.objects.bulk_create(User(username=f"p{i}-{tag}") for i in range(clients))
    Membership.objects.bulk_create(Membership(campaign=campaign, user=p) for p in players)
    tokens = Token.objects.bulk_create(Token(user=p, key=Token.generate_key()) for p in players)
    dummy = creature_create(campaign=campaign, name="Dummy", kind="monster", hp=10**5, max_hp=10**5)
    return {"campaign": campaign, "owner": owner, "dummy": dummy, "tokens": tokens}


def hit(table: dict[str, Any]) -> Any:
    from audit.services import invocation_dispatch
    from campaigns.services import turn_create

    turn = turn_create(campaign=table["campaign"], actor=table["owner"], message="I attack.")
    row = invocation_dispatch(
        campaign=table["campaign"],
        actor=table["owner"],
        tool_name="modify_creature",
        input={"creature_id": table["dummy"].pk, "hp_delta": -1},
        turn=turn,
    )
    assert row.status == row.Status.COMMITTED, row.error
    return turn


def undo(table: dict[str, Any], turn: Any) -> float:
    """Undo `turn`; return the perf_counter time at which its committed events began to leave."""
    from audit.services import turn_undo
    from campaigns import realtime

    committed: list[float] = []
    send = realtime._send

    def timed_send(group: str, envelopes: list[dict[str, Any]]) -> None:
        committed.append(time.perf_counter())
        send(group, envelopes)

    realtime._send = timed_send
    try:
        outcome = turn_undo(campaign_id=table["campaign"].pk, turn_id=turn.pk, user=table["owner"])
    finally:
        realtime._send = send
    assert len(outcome.reverted) == 1, outcome
    return committed[0]


async def receive(socket: Any, type: str) -> float:
    while True:
        envelope = await socket.receive_json_from(timeout=TIMEOUT)
        if envelope["type"] == type:
            return time.perf_counter()


async def connect_all(table: dict[str, Any]) -> list[Any]:
    from channels.testing import WebsocketCommunicator

    from config.asgi import application

    path = f"/ws/campaigns/{table['campaign'].pk}/"
    sockets = [
        WebsocketCommunicator(
            application, path, headers=[(b"authorization", f"Token {t.key}".encode())]
        )
        for t in table["tokens"]
    ]
    results = await asyncio.gather(*(s.connect(timeout=TIMEOUT) for s in sockets))
    refused = [detail for connected, detail in results if not connected]
    if refused:
        raise SystemExit(f"{len(refused)} clients were refused: {refused[:3]}")
    return sockets


async def measure(clients: int, rounds: int) -> list[float]:
    """Milliseconds from each undo's commit to its receipt, for every client and round."""
    from channels.db import database_sync_to_async

    table = await database_sync_to_async(build_table)(clients)
    sockets = await connect_all(table)
    samples: list[list[float]] = []
    for _ in range(rounds + 1):  # the first round warms connections and is not counted
        turn = await database_sync_to_async(hit)(table)
        await asyncio.gather(*(receive(s, "state_changed") for s in sockets))
        waiting = [asyncio.ensure_future(receive(s, "interaction_reverted")) for s in sockets]
        committed = await database_sync_to_async(undo)(table, turn)
        received = await asyncio.gather(*waiting)
        samples.append([(t - committed) * 1000 for t in received])
    await asyncio.gather(*(s.disconnect() for s in sockets))
    return [ms for round_samples in samples[1:] for ms in round_samples]


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(rounds: int, counts: list[int]) -> None:
    from django.conf import settings
    from django.db import connections

    redis = settings.CHANNEL_LAYERS["default"]
    results: dict[tuple[str, int], list[float]] = {}
    for layer in LAYERS:
        use_layer(layer, redis)
        for clients in counts:
            results[layer, clients] = asyncio.run(measure(clients, rounds))
            connections.close_all()
    print(
        f"undo commit -> interaction_reverted at each client; {rounds} undos per row, "
        "PostgreSQL, one process (WebsocketCommunicator clients)"
    )
    print(
        f"{'layer':<10} {'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'p50/p50@N0':>11}"
    )
    for layer in LAYERS:
        base = statistics.median(results[layer, counts[0]])
        for clients in counts:
            values = results[layer, clients]
            p50 = statistics.median(values)
            print(
                f"{layer:<10} {clients:>7} {p50:>8.2f} {percentile(values, 95):>8.2f} "
                f"{max(values):>8.2f} {p50 / base:>10.2f}x"
            )
    for clients in counts:
        ratio = statistics.median(results["redis", clients]) / statistics.median(
            results["in-memory", clients]
        )
        print(f"redis / in-memory p50 at {clients} clients: {ratio:.2f}x")


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={"rounds": 20, "counts": [10, 50, 200]},
        smoke={"rounds": 2, "counts": [2, 5]},
    )
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/4")
    with django_on_postgres("ws_fanout"):
        main(**run)
