"""Shared fixtures: people with every role, a small world, and captured broadcasts."""

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth.models import Permission, User
from django.db import connections, transaction
from django.test import Client
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from audit.services import invocation_dispatch
from campaigns import realtime
from campaigns.models import (
    Campaign,
    Chapter,
    ChatMessage,
    Creature,
    Dungeon,
    Resource,
    Source,
    Turn,
)
from campaigns.selectors import campaign_state
from campaigns.services import (
    campaign_create,
    chapter_create,
    creature_create,
    dungeon_create,
    membership_add,
    message_post,
    resource_create,
    turn_create,
)
from tests.browser.support import chromium_missing

# The real server (Daphne) for tests that need one: tests/servers.py.
pytest_plugins = ["tests.servers"]


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(item.get_closest_marker("browser") for item in session.items):
        problem = chromium_missing()
        if problem:
            pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """The publisher sends plain sync code's events on its own thread without the caller
    waiting (`campaigns.realtime`): what the fixtures queued (a world's creation) has left
    before the test starts, as it had when the sends were waited for, so a socket the test opens
    does not receive it."""
    yield
    realtime.flush()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """... and whatever the test queued has left before its fixtures (its database, its
    layer) are torn down, so nothing reaches the next test."""
    yield
    realtime.flush()


def pytest_configure(config: Any) -> None:
    from django.conf import settings

    # Tests create many users; the production hasher is deliberately slow.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def own_cache_namespace(settings) -> None:
    """Rate-limit counters live in the shared cache (Redis), which no test transaction
    rolls back: each test counts in a key namespace of its own, and nothing is flushed."""
    settings.CACHES = {
        alias: {**config, "KEY_PREFIX": uuid.uuid4().hex}
        for alias, config in settings.CACHES.items()
    }


def all_at_once(*jobs: Callable[[], Any], timeout: float = 120) -> list[Any]:
    """Start every job at the same instant on its own thread: their results, or the exceptions
    they raised (for the assertions). Each thread closes the database connections it opened."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def worker(i: int, job: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            results[i] = job()
        except Exception as exc:  # collected for the assertions
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i, j)) for i, j in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), "a job never finished"
    return results


@contextmanager
def rolled_back() -> Iterator[None]:
    """Run one Hypothesis example in a transaction rolled back after it, as Django's TestCase
    runs a test: marked as the test's own, so the durable services (`invocation_dispatch`,
    `invocation_revert`, ...) may open their transactions inside it, as inside any test."""
    atomic = transaction.atomic()
    atomic._from_testcase = True  # what TestCase._enter_atomics marks its own blocks with
    with atomic:
        yield
        transaction.set_rollback(True)


def make_user(username: str, **extra: Any) -> User:
    return User.objects.create_user(username=username, password="pw-" + username, **extra)


@dataclass
class World:
    campaign: Campaign
    owner: User
    player: User
    cogm: User
    other: User
    outsider: User
    hero: Creature  # the player's PC
    ally: Creature  # the other member's PC
    goblin: Creature
    orc: Creature
    chapters: list[Chapter]
    dungeon: Dungeon
    foreign: Creature  # a creature of another campaign

    def turn(self, actor: User | None = None, message: str = "I act."):
        return turn_create(campaign=self.campaign, actor=actor or self.player, message=message)


def narrate(turn: Turn, text: str) -> ChatMessage:
    """The GM's narration in `turn`, posted as the GM's worker posts it."""
    return message_post(
        turn=turn,
        author=None,
        role=ChatMessage.Role.GM,
        source=Source.AI_TOOL_EXECUTION,
        content=text,
    )


def gm_turn(world: World, message: str, *, actor=None, narration: str = "The GM answers.") -> Turn:
    """A turn of `actor`'s (the player's) that the GM has answered with `narration`."""
    turn = turn_create(campaign=world.campaign, actor=actor or world.player, message=message)
    narrate(turn, narration)
    Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.COMPLETED)
    return turn


def build_world(prefix: str = "") -> World:
    owner, player, cogm, other, outsider = (
        make_user(prefix + name) for name in ("owner", "player", "cogm", "other", "outsider")
    )
    # Approval off: the tests of the log, revert and the GM run calls at once; the approval
    # tests (tests/audit/test_approval*.py, tests/gm/test_approval_turns.py) turn it on.
    campaign = campaign_create(
        owner=owner, name="The Sunken Keep", approval_policy=Campaign.ApprovalPolicy.NONE
    )
    membership_add(campaign=campaign, by=owner, username=player.username)
    membership_add(campaign=campaign, by=owner, username=other.username)
    membership_add(campaign=campaign, by=owner, username=cogm.username, can_revert_any=True)
    hero = creature_create(
        campaign=campaign,
        by=owner,
        name="Thorin",
        kind="pc",
        hp=20,
        max_hp=24,
        controlled_by=player,
        x=1,
        y=1,
    )
    ally = creature_create(
        campaign=campaign,
        by=owner,
        name="Lia",
        kind="pc",
        hp=15,
        max_hp=15,
        controlled_by=other,
        x=2,
        y=1,
    )
    goblin = creature_create(
        campaign=campaign, by=owner, name="Goblin", kind="monster", hp=7, max_hp=7, x=5, y=5
    )
    orc = creature_create(campaign=campaign, by=owner, name="Orc", kind="monster", hp=15, max_hp=15)
    for creature in (hero, ally):
        for name, current, maximum, recharge in (
            ("spell_slot", 1, 3, Resource.Recharge.LONG_REST),
            ("ki", 0, 2, Resource.Recharge.SHORT_REST),
        ):
            resource_create(
                campaign=campaign,
                creature=creature,
                by=owner,
                name=name,
                current=current,
                maximum=maximum,
                recharge=recharge,
            )
    chapters = [
        chapter_create(campaign=campaign, by=owner, title=t) for t in ("Arrival", "Depths", "End")
    ]
    dungeon = dungeon_create(campaign=campaign, by=owner, name="Flooded Crypt")
    elsewhere = campaign_create(owner=outsider, name="Elsewhere")
    foreign = creature_create(
        campaign=elsewhere, by=outsider, name="Stranger", kind="npc", hp=5, max_hp=5
    )
    campaign.refresh_from_db()
    return World(
        campaign,
        owner,
        player,
        cogm,
        other,
        outsider,
        hero,
        ally,
        goblin,
        orc,
        chapters,
        dungeon,
        foreign,
    )


def dump(campaign: Campaign) -> str:
    """The canonical dump as one string: equal strings are the same world, byte for byte."""
    return json.dumps(campaign_state(campaign), sort_keys=True)


def call(world: World, tool_name: str, data: Any, **extra: Any) -> ToolInvocation:
    """A tool call through the audited dispatch in the world's campaign, as the GM makes it
    (source `gm`: the GM's powers, docs/tools.md) on the owner's turn unless `actor` says
    otherwise; `extra` goes to the dispatch (turn, model, source, ...)."""
    extra.setdefault("actor", world.owner)
    extra.setdefault("source", InvocationOrigin.GM)
    return invocation_dispatch(campaign=world.campaign, tool_name=tool_name, input=data, **extra)


def fill_log(world: World, rows: int) -> None:
    """`rows` committed calls in the world's campaign that write nothing any test reads (the
    scene's description): a longer log, for costs that must not grow with it."""
    for i in range(rows):
        invocation_dispatch(
            campaign=world.campaign,
            actor=world.owner,
            tool_name="set_scene",
            input={"description": f"Scene {i}"},
        )


def commit(world: World, tool_name: str, data: Any, **extra: Any) -> ToolInvocation:
    """A `call` that must commit."""
    row = call(world, tool_name, data, **extra)
    assert row.status == ToolInvocation.Status.COMMITTED, row.error
    return row


# Fog in play (docs/architecture.md, the battle map): the party's cells, the orc's and an empty
# one (3,3) revealed; the goblin (5,5) stands in an unrevealed cell, out of the players' sight.
REVEALED = [[0, 0], [1, 1], [2, 1], [3, 3]]


def fog_over_the_goblin(world: World) -> ToolInvocation:
    """Reveal REVEALED: from now on the players do not see the goblin."""
    return commit(world, "reveal_fog", {"cells": REVEALED})


@pytest.fixture
def at_the_default_policy(request):
    """The test's world starts at `critical`, where a campaign made before `watchful` became the
    default stands (the test world runs at `none`, so that the log's tests run their calls at
    once); nothing without a world. For the tests of the policy itself (`pytestmark =
    pytest.mark.usefixtures(...)`)."""
    if "world" not in request.fixturenames:
        return
    world = request.getfixturevalue("world")
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()


def held_hit(world: World, actor: Any, **extra: Any) -> ToolInvocation:
    """The GM's 5-point hit on the goblin in `actor`'s turn, held for approval: the campaign is
    switched to the `critical` policy first; `extra` goes to the dispatch (model, ...)."""
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()
    row = call(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -5},
        actor=actor,
        turn=world.turn(actor),
        source=InvocationOrigin.GM,
        **extra,
    )
    assert row.status == ToolInvocation.Status.AWAITING_APPROVAL, row.error
    return row


def signed_in(user: User) -> Client:
    """A test client holding `user`'s session, as a browser would after signing in."""
    client = Client()
    client.force_login(user)
    return client


def recorded_denial() -> tuple[str, Any, Any, str, str | None]:
    """The one security event there is, as (kind, user, campaign, target, ip)."""
    event = SecurityEvent.objects.get()
    return (event.kind, event.user, event.campaign, event.target, event.ip)


@pytest.fixture
def world(db) -> World:
    return build_world()


@pytest.fixture
def staff(db) -> User:
    user = make_user("staff", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="revert_toolinvocation"))
    return User.objects.get(pk=user.pk)


@pytest.fixture(autouse=True)
def events_round_trip_json(monkeypatch) -> None:
    """Every event is made as the wire carries it: a payload JSON cannot hold fails where the
    event is made, in the test that made it."""
    monkeypatch.setattr(realtime, "ROUND_TRIP_JSON", True)


@pytest.fixture
def events(monkeypatch) -> list[dict[str, Any]]:
    """Every envelope the publisher sends, in order (after commit), as the GM sees them."""
    sent: list[dict[str, Any]] = []

    def send(group: str, envelopes: list[dict[str, Any]], players: Any = None) -> None:
        sent.extend(envelopes)

    monkeypatch.setattr(realtime, "_send", send)
    return sent


def run_due_tasks() -> list[Any]:
    """Run every task that is due, oldest first, in this process and thread, as a worker
    (`manage.py task_worker`) runs them (minus the worker's signal handlers and connection
    recycling, which a test's transaction cannot have): their return values, in order. A task
    that raised fails the test with its traceback."""
    worker = Worker(
        queue_names=["*"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="test-inline-worker",
        excluded_queue_names=[],
    )
    returned = []
    while (job := DBTaskResult.objects.ready().first()) is not None:
        job.claim(worker.worker_id)
        worker.run_task(job)
        job.refresh_from_db()
        assert job.status == "SUCCESSFUL", job.traceback
        returned.append(job.return_value)
    return returned


@pytest.fixture
def run_gm_tasks(django_capture_on_commit_callbacks) -> Callable[[], list[Any]]:
    """Run the queued GM work (the turns' tasks that are due) now, in this process, with the
    events of the transactions they commit delivered. Do not nest it in another
    `django_capture_on_commit_callbacks` block: the events would be delivered twice."""

    def run() -> list[Any]:
        with django_capture_on_commit_callbacks(execute=True):
            return run_due_tasks()

    return run


async def asgi_http(app: Any, method: str, path: str, body: bytes = b"", headers: Any = ()) -> Any:
    """One HTTP request straight into an ASGI app, as a server would send it:
    (status, headers, whole body)."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"testserver"), *headers],
        "server": ("testserver", 80),
        "scheme": "http",
    }
    communicator = ApplicationCommunicator(app, scope)
    await communicator.send_input({"type": "http.request", "body": body})
    start = await communicator.receive_output(timeout=10)
    content = b""
    while True:
        chunk = await communicator.receive_output(timeout=10)
        content += chunk.get("body", b"")
        if not chunk.get("more_body"):
            break
    return start["status"], start["headers"], content
