"""A prepared read returns what its queryset returns, compiled once (core/prepared.py)."""

import threading
import uuid

import pytest
from django.db import connection, connections
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext

from campaigns.models import Campaign, Creature, Turn
from core.prepared import prepared
from tests.conftest import World, build_world

FIELDS = ("id", "name", "hp", "x", "y", "controlled_by_id", "conditions")

creature_rows = prepared(
    lambda campaign_id: (
        Creature.objects.filter(campaign_id=campaign_id).order_by("pk").values(*FIELDS)
    )
)
creatures_named = prepared(
    lambda campaign_id, names: (
        Creature.objects.filter(campaign_id=campaign_id, name__in=names)
        .order_by("pk")
        .values_list("name", flat=True)
    )
)
first_creatures = prepared(
    lambda campaign_id, count: Creature.objects.filter(campaign_id=campaign_id).order_by("pk")[
        :count
    ]
)
creatures_alive = prepared(
    lambda campaign_id, alive: (
        Creature.objects.filter(campaign_id=campaign_id)
        .filter(hp__gt=0 if alive else -1)
        .exclude(hp__gt=0 if not alive else 10**9)
        .order_by("pk")
        .values_list("name", flat=True)
    )
)
creatures_like = prepared(
    lambda campaign_id, part: Creature.objects.filter(
        campaign_id=campaign_id, name__icontains=part
    ).values_list("name", flat=True)
)
turns_with_actor = prepared(
    lambda campaign_id: (
        Turn.objects.filter(campaign_id=campaign_id).select_related("actor").order_by("pk")
    )
)


@pytest.fixture
def two_worlds(db) -> tuple[World, World]:
    return build_world(), build_world("b-")


def plain_rows(campaign: Campaign) -> list[dict]:
    return list(Creature.objects.filter(campaign=campaign).order_by("pk").values(*FIELDS))


def test_each_call_reads_its_own_arguments_rows(two_worlds):
    first, second = two_worlds
    second.goblin.conditions = ["prone"]
    second.goblin.save()
    for world in (first, second, first):
        assert creature_rows(world.campaign.pk) == plain_rows(world.campaign)
    assert creature_rows(uuid.uuid4()) == []


def test_a_campaign_id_as_a_string_reads_the_same(two_worlds):
    first, _ = two_worlds
    assert creature_rows(str(first.campaign.pk)) == plain_rows(first.campaign)


def test_a_read_is_compiled_once_then_runs_one_statement(two_worlds, monkeypatch):
    first, second = two_worlds
    creature_rows(first.campaign.pk)  # compiled here
    expected = plain_rows(second.campaign)
    compiled = []
    as_sql = SQLCompiler.as_sql
    monkeypatch.setattr(
        SQLCompiler, "as_sql", lambda self, *a, **k: compiled.append(1) or as_sql(self, *a, **k)
    )
    with CaptureQueriesContext(connection) as queries:
        rows = creature_rows(second.campaign.pk)
    assert rows == expected
    assert len(queries.captured_queries) == 1
    assert compiled == []


def test_a_read_is_parsed_and_planned_once_per_connection_on_postgresql(two_worlds):
    """Its statement is also prepared on the server, once, then run with each call's values."""
    first, second = two_worlds
    rows_of = prepared(
        lambda campaign_id: (
            Creature.objects.filter(campaign_id=campaign_id).order_by("pk").values(*FIELDS)
        )
    )
    for world in (first, second, first):
        assert rows_of(world.campaign.pk) == plain_rows(world.campaign)
    (statement,) = rows_of._statements.values()
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        on_server = [text for (text,) in cursor.fetchall()]
    assert on_server.count(statement.sql.replace("%s", "$1")) == 1, on_server


def test_model_instances_come_with_their_related_rows(two_worlds):
    first, second = two_worlds
    for world in (first, second):
        world.turn(message="a")
        world.turn(actor=world.other, message="b")
    with CaptureQueriesContext(connection) as queries:
        turns = turns_with_actor(second.campaign.pk)
        actors = [t.actor.username for t in turns]
    assert len(queries.captured_queries) == 1
    assert actors == ["b-player", "b-other"]
    expected = list(Turn.objects.filter(campaign=second.campaign).order_by("pk"))
    assert [(t.pk, t.created_at, t.status) for t in turns] == [
        (t.pk, t.created_at, t.status) for t in expected
    ]


def test_a_list_reads_its_items_whatever_its_length(two_worlds):
    first, second = two_worlds
    pk = first.campaign.pk
    assert creatures_named(pk, ["Goblin"]) == ["Goblin"]
    assert creatures_named(pk, ["Orc", "Goblin"]) == ["Goblin", "Orc"]
    assert creatures_named(pk, ["Thorin", "Nobody", "Lia"]) == ["Thorin", "Lia"]
    assert creatures_named(pk, []) == []
    assert creatures_named(second.campaign.pk, ["Orc"]) == ["Orc"]


def test_a_static_argument_is_compiled_per_value(two_worlds):
    first, _ = two_worlds
    pk = first.campaign.pk
    everyone = list(Creature.objects.filter(campaign=first.campaign).order_by("pk"))
    assert first_creatures(pk, 1) == everyone[:1]
    assert first_creatures(pk, 3) == everyone[:3]
    assert first_creatures(pk, 1) == everyone[:1]


def test_a_flag_is_compiled_per_value(two_worlds):
    first, _ = two_worlds
    first.orc.hp = 0
    first.orc.save()
    pk = first.campaign.pk
    assert creatures_alive(pk, True) == ["Thorin", "Lia", "Goblin"]
    assert creatures_alive(pk, False) == ["Orc"]
    assert creatures_alive(pk, True) == ["Thorin", "Lia", "Goblin"]


def test_an_argument_a_lookup_transforms_is_static(two_worlds):
    first, _ = two_worlds
    pk = first.campaign.pk
    assert creatures_like(pk, "gob") == ["Goblin"]
    assert sorted(creatures_like(pk, "or")) == ["Orc", "Thorin"]


@pytest.mark.django_db(transaction=True)
def test_another_thread_reads_on_its_own_connection():
    world = build_world()
    creature_rows(world.campaign.pk)  # compiled on this thread's connection
    seen = []

    def read() -> None:
        try:
            seen.append(creature_rows(world.campaign.pk))
            seen.append(connections["default"].connection is not None)
        finally:
            connections.close_all()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(30)
    assert seen == [plain_rows(world.campaign), True]


turns_since = prepared(
    lambda campaign_id, since: (
        Turn.objects.filter(campaign_id=campaign_id, created_at__gte=since)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
)


def test_a_moment_reads_the_rows_after_it(two_worlds):
    first, second = two_worlds
    turns = [first.turn(message=str(i)) for i in range(3)]
    assert turns_since(first.campaign.pk, turns[1].created_at) == [t.pk for t in turns[1:]]
    assert turns_since(first.campaign.pk, turns[0].created_at) == [t.pk for t in turns]
    assert turns_since(second.campaign.pk, turns[0].created_at) == []


def test_a_number_beyond_any_column_reads_nothing(two_worlds):
    first, _ = two_worlds
    assert first_creatures(first.campaign.pk, 1)
    assert creatures_named(first.campaign.pk, ["Goblin"]) == ["Goblin"]
    by_pk = prepared(lambda pk: Creature.objects.filter(pk=pk))
    assert by_pk(first.goblin.pk) == [first.goblin]
    assert by_pk(10**30) == []


def test_statements_kept_per_read_are_bounded(two_worlds, monkeypatch):
    first, _ = two_worlds
    monkeypatch.setattr("core.prepared.MAX_STATEMENTS", 2)
    read = prepared(
        lambda campaign_id, count: Creature.objects.filter(campaign_id=campaign_id).order_by("pk")[
            :count
        ]
    )
    everyone = list(Creature.objects.filter(campaign=first.campaign).order_by("pk"))
    for count in (1, 2, 3, 4, 1):
        assert read(first.campaign.pk, count) == everyone[:count]
    assert len(read._statements) == 2


def test_an_empty_list_leaves_the_read_prepared_for_every_other(two_worlds, monkeypatch):
    first, second = two_worlds
    monkeypatch.setattr("core.prepared.MAX_STATEMENTS", 2)
    read = prepared(
        lambda campaign_id, names: (
            Creature.objects.filter(campaign_id=campaign_id, name__in=names)
            .order_by("pk")
            .values_list("name", flat=True)
        )
    )
    for world in (first, second, first, second):
        assert read(world.campaign.pk, []) == []  # a campaign's empty list, again and again
    assert read(first.campaign.pk, ["Orc"]) == ["Orc"]
    assert read(second.campaign.pk, ["Goblin"]) == ["Goblin"]
    assert len(read._statements) == 1


creature_named = prepared(
    lambda campaign_id, name: Creature.objects.filter(campaign_id=campaign_id, name=name)
)


def test_get_and_first_answer_as_the_querysets_do(two_worlds):
    first, second = two_worlds
    campaign, goblin = first.campaign, first.goblin
    assert creature_named.get(campaign.pk, goblin.name) == goblin
    assert creature_named.first(campaign.pk, goblin.name) == goblin
    with pytest.raises(Creature.DoesNotExist):
        creature_named.get(second.campaign.pk, "nobody")
    assert creature_named.first(second.campaign.pk, "nobody") is None
    Creature.objects.create(campaign=campaign, name=goblin.name, hp=1, max_hp=1)
    with pytest.raises(Creature.MultipleObjectsReturned):
        creature_named.get(campaign.pk, goblin.name)
