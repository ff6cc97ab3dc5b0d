"""Many instances behave as one (PostgreSQL + Redis): two ASGI servers and two task workers. A
turn posted on server A is run by either worker, its events reach a websocket on server B, and
an undo on B racing the worker mid-turn leaves no committed tool call on the undone turn."""

import base64
import hashlib
import json
import os
import socket
import struct
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from django_tasks_db.models import DBTaskResult

from audit.models import ToolInvocation
from campaigns.models import Creature, Turn
from tests.conftest import World, postgres_only
from tests.realtime.conftest import redis_only
from tests.servers import api_token, http

pytestmark = [postgres_only, redis_only]
DEADLINE = 45.0
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 §1.3


class Feed:
    """A non-browser client of `/ws/campaigns/{id}/` (token header, no Origin) speaking RFC 6455
    over a plain socket, reading on a thread of its own: `events` holds every envelope."""

    def __init__(self, base_url: str, campaign_id: Any, token: str) -> None:
        url = urlsplit(base_url)
        self.sock = socket.create_connection((url.hostname, url.port), timeout=DEADLINE)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /ws/campaigns/{campaign_id}/ HTTP/1.1\r\nHost: {url.netloc}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                f"Sec-WebSocket-Key: {key}\r\nAuthorization: Token {token}\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        assert head.startswith(b"HTTP/1.1 101") and accept.encode() in head, head
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            data += chunk
        return data

    def _read(self) -> None:
        try:
            while True:
                first, second = self._exactly(2)
                length = second & 0x7F
                if length == 126:
                    length = struct.unpack("!H", self._exactly(2))[0]
                elif length == 127:
                    length = struct.unpack("!Q", self._exactly(8))[0]
                payload = self._exactly(length)
                opcode = first & 0x0F
                if opcode == 1:
                    self.events.append(json.loads(payload))
                elif opcode == 9:  # ping: answer with a (masked) pong
                    self._send(0xA, payload)
                elif opcode == 8:
                    return
        except OSError:
            return

    def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked)

    def close(self) -> None:
        self.sock.close()

    def wait_for(self, type: str, turn: int) -> dict[str, Any]:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            for envelope in list(self.events):
                if envelope["type"] == type and envelope["turn"] == turn:
                    return envelope
            time.sleep(0.02)
        raise AssertionError(f"no {type} for turn {turn} within {DEADLINE} s: {self.events}")


def test_a_turn_posted_on_one_server_streams_to_the_other_and_an_undo_there_wins(
    live_world: World, asgi_server: str, asgi_server_b: str, gm_workers
):
    world = live_world
    workers = [gm_workers(delay=0.5), gm_workers(delay=0.5)]
    player_a = api_token(asgi_server, world.player.username)
    other_b = api_token(asgi_server_b, world.other.username)
    player_b = api_token(asgi_server_b, world.player.username)
    turns = f"/api/campaigns/{world.campaign.pk}/turns/"

    feed = Feed(asgi_server_b, world.campaign.pk, other_b)
    try:
        status, _, body = http(
            "POST",
            asgi_server + turns,
            {"message": "I attack the goblin, then move me to 3,4"},
            player_a,
        )
        assert (status, body["status"]) == (201, "queued")
        turn_id = body["id"]
        queued = feed.wait_for("message_created", turn_id)
        assert queued["data"]["gm"] == "queued"
        feed.wait_for("gm_turn_started", turn_id)
        feed.wait_for("state_changed", turn_id)  # the first tool call has committed

        status, _, undone = http(
            "POST", f"{asgi_server_b}{turns}{turn_id}/undo/", {"reason": "not now"}, player_b
        )
        assert status == 200, undone
        reverted = feed.wait_for("interaction_reverted", turn_id)
        completed = feed.wait_for("gm_turn_completed", turn_id)
    finally:
        feed.close()

    assert reverted["data"]["reason"] == "not now"
    assert completed["data"]["status"] in ("cancelled", "completed")
    turn = Turn.objects.get(pk=turn_id)
    assert turn.reverted_at is not None and turn.status == completed["data"]["status"]
    rows = ToolInvocation.objects.filter(turn=turn)
    assert rows.exists()
    assert not rows.filter(status="committed").exists()  # nothing committed on an undone turn
    assert Creature.objects.get(pk=world.goblin.pk).hp == 7
    hero = Creature.objects.get(pk=world.hero.pk)
    assert (hero.x, hero.y) == (world.hero.x, world.hero.y)
    # The worker stores its task's result just after the task returns, which is after the turn's
    # last event went out: wait for it rather than race it.
    jobs = DBTaskResult.objects.filter(
        task_path="gm.tasks.run_turn", return_value=f"turn {turn_id} {turn.status}"
    )
    deadline = time.monotonic() + 30
    while not jobs.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    [job] = jobs
    assert job.worker_ids[-1] in {w.name for w in workers}
    # Events of two processes (the worker's, server B's undo) may arrive out of commit order;
    # what the feed promises is that none is lost: the seqs it saw are gap-free.
    seqs = sorted(e["seq"] for e in feed.events if e["type"] != "hello")
    assert seqs == list(range(seqs[0], seqs[-1] + 1))
