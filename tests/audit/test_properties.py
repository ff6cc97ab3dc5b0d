"""Property tests: any sequence of tool calls, reverted newest first, restores the world byte for
byte; random single reverts either succeed or name the later invocations in the way, and never
corrupt what a full rewind gets back to."""

import json
from typing import Any

from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_tools import registry
from audit.models import ToolInvocation
from audit.services import invocation_dispatch, invocation_revert
from campaigns.models import Chapter, Creature, Dungeon
from campaigns.selectors import campaign_state
from core.errors import Conflict
from tests.conftest import World, build_world


def dump(campaign) -> str:
    return json.dumps(campaign_state(campaign), sort_keys=True)


def creature_id(data: st.DataObject, world: World, *, pcs_only: bool = False) -> int:
    creatures = Creature.objects.filter(campaign=world.campaign)
    if pcs_only:
        creatures = creatures.filter(kind="pc")
    return data.draw(st.sampled_from(sorted(creatures.values_list("pk", flat=True))))


def _some(draw_from: Any) -> Any:
    return st.sampled_from(draw_from)


# One input generator per tool, drawing ids from the world as it is at that step.
INPUTS = {
    "modify_creature": lambda d, w: {
        "creature_id": creature_id(d, w),
        **d.draw(
            st.one_of(
                st.fixed_dictionaries({"hp_delta": st.integers(-30, 30)}),
                st.fixed_dictionaries({"set_hp": st.integers(0, 30)}),
                st.fixed_dictionaries({"temp_hp": st.integers(0, 10)}),
                st.fixed_dictionaries(
                    {
                        "add_conditions": st.lists(
                            _some(["prone", "dead", "poisoned"]), min_size=1, max_size=2
                        )
                    }
                ),
                st.fixed_dictionaries(
                    {
                        "remove_conditions": st.lists(
                            _some(["prone", "dead"]), min_size=1, max_size=2
                        )
                    }
                ),
                st.fixed_dictionaries({"death_save": _some(["success", "failure", "reset"])}),
            )
        ),
    },
    "start_combat": lambda d, w: {
        "creature_ids": d.draw(
            st.lists(
                _some(
                    sorted(
                        Creature.objects.filter(campaign=w.campaign).values_list("pk", flat=True)
                    )
                ),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
    },
    "end_combat": lambda d, w: {},
    "advance_turn": lambda d, w: {},
    "end_adventure": lambda d, w: {
        "achievements": d.draw(st.lists(_some(["brave", "wise"]), max_size=2, unique=True))
    },
    "advance_chapter": lambda d, w: d.draw(
        st.one_of(
            st.just({}),
            st.builds(
                lambda pk: {"to_chapter": pk},
                _some(
                    sorted(Chapter.objects.filter(campaign=w.campaign).values_list("pk", flat=True))
                ),
            ),
        )
    ),
    "consume_resource": lambda d, w: {
        "creature_id": creature_id(d, w, pcs_only=True),
        "resource": d.draw(_some(["spell_slot", "ki"])),
        "amount": d.draw(st.integers(1, 2)),
    },
    "rest": lambda d, w: {"kind": d.draw(_some(["short", "long"]))},
    "activate_dungeon": lambda d, w: {"dungeon_id": Dungeon.objects.get(campaign=w.campaign).pk},
    "reveal_fog": lambda d, w: {
        "cells": d.draw(
            st.lists(
                st.tuples(st.integers(0, 3), st.integers(0, 3)).map(list), min_size=1, max_size=4
            )
        )
    },
    "write_memory": lambda d, w: {
        "content": d.draw(_some(["a clue", "a lie"])),
        **d.draw(_some([{}, {"key": "npc"}, {"key": "door"}])),
    },
    "spawn_creature": lambda d, w: {
        "name": "Spawn",
        "kind": d.draw(_some(["npc", "monster"])),
        "hp": d.draw(st.integers(1, 10)),
    },
    "give_item": lambda d, w: {
        "creature_id": creature_id(d, w),
        "item": d.draw(_some(["rope", "gem"])),
        "quantity": d.draw(_some([-2, -1, 1, 2])),
    },
    "set_scene": lambda d, w: {
        "description": d.draw(_some(["Dark", "Bright"])),
        **d.draw(_some([{}, {"location": "Hall"}])),
    },
    "move_token": lambda d, w: {
        "creature_id": creature_id(d, w),
        "x": d.draw(st.integers(0, 5)),
        "y": d.draw(st.integers(0, 5)),
    },
}

TOOLS = sorted(tool.name for tool in registry.write_tools())
PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def test_every_write_tool_has_an_input_generator():
    assert set(INPUTS) == set(TOOLS)


def play(data: st.DataObject, world: World) -> list[ToolInvocation]:
    rows = []
    for _ in range(data.draw(st.integers(1, 30), label="calls")):
        name = data.draw(st.sampled_from(TOOLS), label="tool")
        actor = data.draw(st.sampled_from([world.owner, world.player]), label="actor")
        rows.append(
            invocation_dispatch(
                campaign=world.campaign,
                actor=actor,
                tool_name=name,
                input=INPUTS[name](data, world),
            )
        )
    return rows


def rewind(world: World) -> None:
    for row in ToolInvocation.objects.filter(campaign=world.campaign, status="committed"):
        outcome = invocation_revert(
            campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
        )
        assert outcome.reverted, outcome.skip_reason


@PROPERTY_SETTINGS
@given(data=st.data())
def test_reverting_newest_first_restores_the_world_byte_for_byte(db, data):
    with transaction.atomic():
        world = build_world()
        start = dump(world.campaign)
        rows = play(data, world)
        assert {r.status for r in rows} <= {"committed", "failed"}
        rewind(world)  # the log's default ordering is newest first
        assert dump(world.campaign) == start
        transaction.set_rollback(True)


@PROPERTY_SETTINGS
@given(data=st.data())
def test_random_single_reverts_succeed_or_name_later_conflicts(db, data):
    with transaction.atomic():
        world = build_world()
        start = dump(world.campaign)
        play(data, world)
        committed = list(ToolInvocation.objects.filter(campaign=world.campaign, status="committed"))
        for _ in range(data.draw(st.integers(1, 5), label="reverts")):
            if not committed:
                break
            target = data.draw(st.sampled_from(committed), label="target")
            try:
                outcome = invocation_revert(
                    campaign_id=world.campaign.pk, invocation_id=target.pk, user=world.owner
                )
            except Conflict as conflict:
                later = ToolInvocation.objects.filter(pk__in=conflict.conflicts)
                assert conflict.conflicts and later.count() == len(conflict.conflicts)
                assert all(r.sequence > target.sequence and r.status == "committed" for r in later)
                continue
            assert outcome.reverted
            committed.remove(target)
        rewind(world)
        assert dump(world.campaign) == start
        transaction.set_rollback(True)
