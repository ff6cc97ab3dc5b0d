"""A valid call of every write tool against the shared world. A tool without an example fails
`test_every_write_tool_has_an_example`, so a 16th tool cannot slip past the round-trip test."""

from collections.abc import Callable
from typing import Any

from audit.services import invocation_dispatch
from tests.conftest import World


def _with_combat(world: World) -> None:
    invocation_dispatch(
        campaign=world.campaign,
        actor=world.owner,
        tool_name="start_combat",
        input={"creature_ids": [world.hero.pk, world.goblin.pk]},
    )


def _advance_turn(world: World) -> dict[str, Any]:
    _with_combat(world)
    return {}


def _end_combat(world: World) -> dict[str, Any]:
    _with_combat(world)
    return {}


EXAMPLES: dict[str, Callable[[World], dict[str, Any]]] = {
    "modify_creature": lambda w: {
        "creature_id": w.goblin.pk,
        "hp_delta": -5,
        "add_conditions": ["prone"],
        "death_save": "failure",
    },
    "start_combat": lambda w: {
        "creature_ids": [w.hero.pk, w.goblin.pk],
        "initiative": {str(w.goblin.pk): 15},
    },
    "end_adventure": lambda w: {
        "summary": "The keep is cleansed.",
        "achievements": ["keep_cleansed", "survivor"],
    },
    "end_combat": _end_combat,
    "advance_chapter": lambda w: {},
    "consume_resource": lambda w: {"creature_id": w.hero.pk, "resource": "spell_slot", "amount": 1},
    "rest": lambda w: {"kind": "long"},
    "activate_dungeon": lambda w: {"dungeon_id": w.dungeon.pk},
    "advance_turn": _advance_turn,
    "reveal_fog": lambda w: {"cells": [[1, 1], [1, 2], [1, 1]]},
    "write_memory": lambda w: {"content": "The mayor lies.", "key": "mayor"},
    "spawn_creature": lambda w: {"name": "Skeleton", "kind": "monster", "hp": 13, "x": 3, "y": 4},
    "give_item": lambda w: {"creature_id": w.hero.pk, "item": "rope", "quantity": 2},
    "set_scene": lambda w: {"description": "Water drips in the dark.", "location": "Crypt"},
    "move_token": lambda w: {"creature_id": w.hero.pk, "x": 3, "y": 4},
}
