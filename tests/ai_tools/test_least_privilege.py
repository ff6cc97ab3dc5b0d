"""Least privilege, tool × role, on every path a call comes by (docs/tools.md#who-may-call-what):
nobody may do through an agent what they may not do by hand.

The GM's powers (the GM runner, the owner, a co-GM) reach every call; a player's reach only the
tools whose reach is `own_character`, on their own character. A refused call is a failed row, a
`tool_call_denied` security event and a 403, and changes nothing. The GM runner's side of the
matrix is tests/gm/test_gm_powers.py."""

import re
from pathlib import Path
from typing import Any

import pytest
from guardian.shortcuts import remove_perm

from ai_tools import registry
from ai_tools.base import Reach, Ref, resolve_refs
from audit.models import InvocationOrigin, SecurityEvent, ToolInvocation
from audit.services.approval import invocation_approve
from campaigns.models import Creature
from core.errors import CallRefused
from tests.ai_tools.examples import example_cases, example_input, world_pk
from tests.api.conftest import campaign_url, client_for
from tests.conftest import World, call, commit, dump

pytestmark = pytest.mark.django_db

DOC = Path(__file__).resolve().parents[2] / "docs" / "tools.md"
CREATURES = {"hero", "ally", "goblin", "orc"}
# A player's character, another player's, a monster: where an `own_character` tool's example
# is pointed for a player's call.
TARGETS = {"own": "hero", "another player's": "ally", "a monster": "goblin"}


def tool_call(world: World, user: Any, tool_name: str, data: Any) -> Any:
    """A REST tool call by `user` into a turn of their own, as an outside agent makes it."""
    turn = world.turn(user)
    url = campaign_url(world, f"turns/{turn.pk}/tool-calls/")
    return client_for(user).post(url, {"tool": tool_name, "input": data}, format="json")


def assert_refused(world: World, response: Any, before: str, user: Any, target: str) -> None:
    """403 naming the failed row, one security event saying who and what, nothing changed."""
    assert response.status_code == 403, response.json()
    body = response.json()
    row = ToolInvocation.objects.get(pk=body["invocation"])
    assert row.status == ToolInvocation.Status.FAILED
    assert row.error == body["detail"]
    event = SecurityEvent.objects.get()
    assert (event.kind, event.user) == ("tool_call_denied", user)
    assert event.campaign_id == row.campaign_id
    assert event.target == target
    assert event.detail["invocation"] == str(row.pk)
    assert dump(world.campaign) == before


def creature_refs(value: Any) -> set[str]:
    if isinstance(value, Ref):
        return {value.name} & CREATURES
    if isinstance(value, dict):
        return set().union(set(), *map(creature_refs, [*value, *value.values()]))
    if isinstance(value, list | tuple):
        return set().union(set(), *map(creature_refs, value))
    return set()


def pointed_at(world: World, example: Any, name: str) -> Any:
    """The example with every creature it names replaced by the creature `name`."""

    def pk(ref: Ref) -> Any:
        return world_pk(world, Ref(name) if ref.name in CREATURES else ref)

    return resolve_refs(example, pk)


def targeted_cases() -> list[Any]:
    """Each `own_character` tool's examples that name a creature, × where they are pointed."""
    return [
        pytest.param(tool.name, index, whose, id=f"{tool.name}-{index}-{TARGETS[whose]}")
        for tool in registry.write_tools()
        if tool.reach is Reach.OWN_CHARACTER
        for index, example in enumerate(tool.examples)
        if creature_refs(example)
        for whose in TARGETS
    ]


def gm_only_cases() -> list[Any]:
    return [
        pytest.param(tool.name, index, id=f"{tool.name}-{index}")
        for tool in registry.write_tools()
        if tool.reach is Reach.GM
        for index in range(len(tool.examples))
    ]


@pytest.mark.parametrize("role", ["owner", "cogm"])
@pytest.mark.parametrize("tool_name,index", example_cases())
def test_those_who_run_the_table_may_make_every_call_through_rest(world, role, tool_name, index):
    data = example_input(world, registry.write_tool(tool_name), index)
    response = tool_call(world, getattr(world, role), tool_name, data)
    assert response.status_code == 201, response.json()
    assert not SecurityEvent.objects.exists()


@pytest.mark.parametrize("tool_name,index", gm_only_cases())
def test_a_player_may_not_make_a_gm_call_through_rest(world, tool_name, index):
    data = example_input(world, registry.write_tool(tool_name), index)
    before = dump(world.campaign)
    response = tool_call(world, world.player, tool_name, data)
    assert_refused(world, response, before, world.player, f"tool:{tool_name}")


@pytest.mark.parametrize("tool_name,index,whose", targeted_cases())
def test_a_player_acts_on_their_own_character_only_through_rest(world, tool_name, index, whose):
    tool = registry.write_tool(tool_name)
    example_input(world, tool, index)  # its setup calls, by the owner
    data = pointed_at(world, tool.examples[index], TARGETS[whose])
    before = dump(world.campaign)
    response = tool_call(world, world.player, tool_name, data)
    if whose == "own":
        assert response.status_code == 201, response.json()
        assert not SecurityEvent.objects.exists()
    else:
        target = getattr(world, TARGETS[whose])
        assert_refused(world, response, before, world.player, f"creature:{target.pk}")


def test_the_players_agent_cannot_move_or_kill_another_players_character(world, settings):
    """The red team's reproduction: alice's agent, in alice's own turn, on bob's character."""
    before = dump(world.campaign)
    moved = tool_call(
        world, world.player, "move_token", {"creature_id": world.ally.pk, "x": 9, "y": 9}
    )
    assert_refused(world, moved, before, world.player, f"creature:{world.ally.pk}")
    SecurityEvent.objects.all().delete()
    killed = tool_call(
        world,
        world.player,
        "modify_creature",
        {"creature_id": world.ally.pk, "hp_delta": -20, "add_conditions": ["dead"]},
    )
    assert_refused(world, killed, before, world.player, f"creature:{world.ally.pk}")
    ally = Creature.objects.get(pk=world.ally.pk)
    assert (ally.x, ally.y, ally.hp, ally.conditions) == (2, 1, 15, [])


def test_a_refusal_is_not_held_for_approval_even_under_a_policy_that_would_hold_it(world):
    world.campaign.approval_policy = "critical"
    world.campaign.save(update_fields=["approval_policy"])
    before = dump(world.campaign)
    response = tool_call(
        world, world.player, "modify_creature", {"creature_id": world.ally.pk, "hp_delta": -20}
    )
    assert_refused(world, response, before, world.player, f"creature:{world.ally.pk}")
    assert not ToolInvocation.objects.filter(status="awaiting_approval").exists()


def test_the_owners_agent_in_a_players_turn_has_the_owners_powers(world):
    """The call has the powers of the person who makes it: the owner's agent is the GM's."""
    turn = world.turn(world.player)
    response = client_for(world.owner).post(
        campaign_url(world, f"turns/{turn.pk}/tool-calls/"),
        {
            "tool": "give_item",
            "input": {"creature_id": world.ally.pk, "item": "gem", "quantity": 1},
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    row = ToolInvocation.objects.get(pk=response.json()["invocation"])
    assert (row.user, row.requested_by) == (world.player, world.owner)


def test_a_player_ends_their_own_characters_combat_turn_but_not_a_monsters(world):
    commit(
        world,
        "start_combat",
        {
            "creature_ids": [world.hero.pk, world.goblin.pk],
            "initiative": {str(world.hero.pk): 18, str(world.goblin.pk): 12},
        },
    )
    assert tool_call(world, world.player, "advance_turn", {}).status_code == 201
    before = dump(world.campaign)
    refused = tool_call(world, world.player, "advance_turn", {})  # the goblin acts now
    assert_refused(world, refused, before, world.player, f"creature:{world.goblin.pk}")


def test_a_players_rest_without_ids_rests_only_their_own_characters(world):
    world.hero.hp = world.ally.hp = 3
    world.hero.save()
    world.ally.save()
    assert tool_call(world, world.player, "rest", {"kind": "long"}).status_code == 201
    world.hero.refresh_from_db()
    world.ally.refresh_from_db()
    assert (world.hero.hp, world.ally.hp) == (24, 3)


def test_the_gms_own_hand_has_the_gms_powers_and_a_players_hand_refused(world):
    """The page's hand (`hand_call`) is the audited dispatch as the person: source `user`."""
    row = commit(
        world,
        "set_scene",
        {"description": "Rain."},
        actor=world.cogm,
        turn=world.turn(world.cogm),
        source=InvocationOrigin.USER,
    )
    assert row.user == world.cogm
    with pytest.raises(CallRefused) as refused:
        call(
            world,
            "set_scene",
            {"description": "Sun."},
            actor=world.player,
            turn=world.turn(world.player),
            source=InvocationOrigin.USER,
        )
    assert refused.value.status_code == 403
    assert SecurityEvent.objects.get().target == "tool:set_scene"


def test_a_held_call_runs_with_the_powers_it_was_asked_with_as_they_are_when_approved(world):
    """A co-GM's held call, approved after the co-GM lost the grant, is refused when it runs."""
    world.campaign.approval_policy = "critical"
    world.campaign.save(update_fields=["approval_policy"])
    response = tool_call(
        world, world.cogm, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -3}
    )
    assert response.status_code == 202
    remove_perm("revert_any_turn", world.cogm, world.campaign)
    before = dump(world.campaign)
    outcome = invocation_approve(
        campaign_id=world.campaign.pk,
        invocation_id=response.json()["invocation"],
        user=world.owner,
        ip=None,
    )
    assert outcome.ran.status == ToolInvocation.Status.FAILED
    assert "is not your character" in outcome.ran.error
    assert SecurityEvent.objects.get().kind == "tool_call_denied"
    assert dump(world.campaign) == before


def _doc_matrix() -> dict[str, tuple[str, str]]:
    section = DOC.read_text().split("## Who may call what", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([\w ]+) \|", section, re.MULTILINE)
    return {name: (tier, reach) for name, tier, reach in rows}


def test_the_docs_matrix_is_the_registrys():
    reach_words = {Reach.GM: "GM", Reach.OWN_CHARACTER: "own character"}
    assert _doc_matrix() == {
        tool.name: (str(tool.tier), reach_words[tool.reach]) for tool in registry.write_tools()
    }
