"""The world dump is one statement (`campaigns.selectors._world_tables`): it must read exactly
what the ORM reads of each of its tables (`WORLD_TABLES`), value for value and in their order."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns import selectors
from campaigns.models import (
    Achievement,
    Creature,
    Encounter,
    Episode,
    FogCell,
    GMMemory,
    InventoryItem,
    Resource,
    ResourceEvent,
)
from tests.conftest import build_world

pytestmark = pytest.mark.django_db


def _every_table_filled():
    world = build_world()
    campaign = world.campaign
    Creature.objects.filter(pk=world.hero.pk).update(
        conditions=["poisoned", {"name": 'frightened "by" the \\ dragon', "rounds": 2.5}]
    )
    resource = Resource.objects.filter(creature=world.hero).order_by("pk").first()
    ResourceEvent.objects.create(campaign=campaign, resource=resource, delta=-1, reason="Ünïcode ✓")
    InventoryItem.objects.create(campaign=campaign, creature=world.ally, name="rope", quantity=3)
    InventoryItem.objects.create(campaign=campaign, creature=world.hero, name="torch", quantity=1)
    Encounter.objects.create(
        campaign=campaign, active=False, round=3, turn_index=1, order=[world.goblin.pk, 7]
    )
    FogCell.objects.create(campaign=campaign, x=4, y=2)
    FogCell.objects.create(campaign=campaign, x=0, y=9)
    GMMemory.objects.create(campaign=campaign, key="", content="line one\nline\ttwo")
    Achievement.objects.create(campaign=campaign, user=world.player, code="first_blood")
    for number, ended_at in (
        (7, datetime(2026, 12, 6, 12, 0, 0, 0, tzinfo=UTC)),  # no fraction of a second
        (8, datetime(2026, 12, 6, 12, 0, 0, 123400, tzinfo=UTC)),  # a fraction with zeros
        (9, None),
    ):
        Episode.objects.create(
            campaign=campaign, number=number, active=False, summary="S", ended_at=ended_at
        )
    return campaign


def test_the_one_statement_reads_what_each_table_read_reads():
    campaign = _every_table_filled()
    by_table = {
        name: list(model.objects.filter(campaign=campaign).order_by(order).values(*fields))
        for name, (model, order, fields) in selectors.WORLD_TABLES.items()
    }
    assert all(by_table.values()), "a table of the dump is empty: the comparison proves less"

    with CaptureQueriesContext(connection) as statements:
        at_once = selectors._world_tables(campaign.pk)

    assert len(statements.captured_queries) == 1
    assert at_once == by_table
    # and so the canonical dump itself, as every reader sees it
    ended = {e["number"]: e["ended_at"] for e in selectors.campaign_state(campaign)["episodes"]}
    assert [ended[7], ended[8], ended[9]] == [
        "2026-12-06T12:00:00+00:00",
        "2026-12-06T12:00:00.123400+00:00",
        None,
    ]


def test_the_dump_reads_each_table_in_its_order():
    """The dump lists each table's rows in its order."""
    campaign = _every_table_filled()
    dump = selectors.campaign_state(campaign)
    assert [c["id"] for c in dump["creatures"]] == sorted(c["id"] for c in dump["creatures"])
    assert [m["user_id"] for m in dump["members"]] == sorted(m["user_id"] for m in dump["members"])
    assert [(f["x"], f["y"]) for f in dump["fog"]] == [(4, 2), (0, 9)]
