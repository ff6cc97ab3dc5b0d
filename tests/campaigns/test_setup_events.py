"""Set-up reaches every open page: each set-up service announces what it made with source
`user`, in the dump's own shape (so a page applies it to its copy of `/state/`), numbered in
the campaign's sequence, after commit, and not at all when the change rolls back."""

import pytest
from django.db import transaction

from campaigns.selectors import campaign_state
from campaigns.services import (
    campaign_create,
    chapter_create,
    creature_create,
    dungeon_create,
    membership_add,
    resource_create,
)
from tests.conftest import World, make_user


def state_row(world: World, table: str, row_id: int) -> dict:
    return next(r for r in campaign_state(world.campaign)[table] if r["id"] == row_id)


def test_each_set_up_service_announces_its_row_as_the_dump_has_it(
    world: World, events, django_capture_on_commit_callbacks
):
    newcomer = make_user("newcomer")
    with django_capture_on_commit_callbacks(execute=True):
        membership_add(
            campaign=world.campaign, by=world.owner, username="newcomer", can_revert_any=True
        )
    with django_capture_on_commit_callbacks(execute=True):
        rat = creature_create(
            campaign=world.campaign,
            by=world.owner,
            name="Rat",
            kind="pc",
            hp=2,
            max_hp=3,
            controlled_by=newcomer,
        )
    with django_capture_on_commit_callbacks(execute=True):
        rage = resource_create(
            campaign=world.campaign,
            creature=rat,
            by=world.owner,
            name="rage",
            current=1,
            maximum=2,
            recharge="none",
        )
    with django_capture_on_commit_callbacks(execute=True):
        chapter = chapter_create(campaign=world.campaign, by=world.owner, title="Epilogue")
    with django_capture_on_commit_callbacks(execute=True):
        dungeon = dungeon_create(campaign=world.campaign, by=world.owner, name="Sewers")
    assert {e["source"] for e in events} == {"user"}
    assert {e["campaign"] for e in events} == {str(world.campaign.pk)}
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(events)))
    member, *changes = events
    assert (member["type"], member["data"]) == (
        "member_added",
        {"user_id": newcomer.pk, "username": "newcomer", "role": "player", "can_revert_any": True},
    )
    assert [(e["type"], e["data"]["entity"], e["data"]["id"]) for e in changes] == [
        ("state_changed", "creature", rat.pk),
        ("state_changed", "resource", rage.pk),
        ("state_changed", "chapter", chapter.pk),
        ("state_changed", "dungeon", dungeon.pk),
    ]
    tables = ["creatures", "resources", "chapters", "dungeons"]
    for change, table in zip(changes, tables, strict=True):
        assert change["data"]["fields"] == state_row(world, table, change["data"]["id"])


def test_the_first_chapter_becomes_current_and_says_so(
    db, events, django_capture_on_commit_callbacks
):
    gm = make_user("gm")
    campaign = campaign_create(owner=gm, name="Fresh")
    with django_capture_on_commit_callbacks(execute=True):
        chapter = chapter_create(campaign=campaign, by=gm, title="One")
    assert [e["data"]["entity"] for e in events] == ["chapter", "campaign"]
    assert events[1]["data"]["fields"] == {"current_chapter_id": chapter.pk}
    assert campaign_state(campaign)["campaign"]["current_chapter_id"] == chapter.pk


def test_a_set_up_change_that_rolls_back_is_never_announced(
    world: World, events, django_capture_on_commit_callbacks
):
    with (
        pytest.raises(RuntimeError),
        django_capture_on_commit_callbacks(execute=True),
        transaction.atomic(),
    ):
        creature_create(
            campaign=world.campaign, by=world.owner, name="Ghost", kind="monster", hp=1, max_hp=1
        )
        raise RuntimeError("rolled back")
    assert events == []
