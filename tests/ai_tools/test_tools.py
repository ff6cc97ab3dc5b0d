"""Every write tool: apply then revert restores the world exactly; bad input changes nothing."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from ai_tools import registry
from ai_tools.base import Powers, ToolContext
from audit.models import ToolInvocation
from audit.services import invocation_revert
from campaigns.models import Campaign, Creature
from tests.ai_tools.contract import assert_write_set_kept, record_apply_changes
from tests.ai_tools.examples import example_cases, example_input
from tests.conftest import call, dump

SPEC_TOOLS = {
    "modify_creature",
    "start_combat",
    "end_adventure",
    "end_combat",
    "advance_chapter",
    "consume_resource",
    "rest",
    "activate_dungeon",
    "advance_turn",
    "reveal_fog",
    "write_memory",
    "spawn_creature",
    "give_item",
    "set_scene",
    "move_token",
}
TOOL_NAMES = [tool.name for tool in registry.write_tools()]


def test_the_fifteen_tools_of_the_spec_are_registered_with_their_tiers():
    assert set(TOOL_NAMES) == SPEC_TOOLS
    tiers = {tool.name: str(tool.tier) for tool in registry.write_tools()}
    assert {n for n, t in tiers.items() if t == "critical"} == {
        "modify_creature",
        "start_combat",
        "end_adventure",
    }
    assert {n for n, t in tiers.items() if t == "low"} == {"set_scene", "move_token"}
    assert {tool.name for tool in registry.read_tools()} == {"get_state", "roll_dice"}


def assert_round_trip(world, tool_name: str, index: int) -> None:
    """The example commits, changes the world, and its revert restores it byte for byte."""
    data = example_input(world, registry.write_tool(tool_name), index)
    before = dump(world.campaign)
    row = call(world, tool_name, data, model="test-model")
    assert row.status == ToolInvocation.Status.COMMITTED, row.error
    assert row.revertible and row.write_set
    assert dump(world.campaign) != before, "the example should change the world"
    outcome = invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
    )
    assert outcome.reverted
    assert dump(world.campaign) == before


@pytest.mark.parametrize("tool_name,index", example_cases())
def test_apply_then_revert_restores_state_exactly(world, tool_name, index):
    assert_round_trip(world, tool_name, index)


def assert_apply_keeps_its_write_set(world, monkeypatch, tool_name: str, index: int) -> None:
    data = example_input(world, registry.write_tool(tool_name), index)
    changes = record_apply_changes(monkeypatch)
    row = call(world, tool_name, data)
    assert row.status == ToolInvocation.Status.COMMITTED, row.error
    assert len(changes) == 1 and changes[0], "apply should have run once and changed the world"
    assert_write_set_kept(row, changes)


@pytest.mark.parametrize("tool_name,index", example_cases())
def test_apply_writes_nothing_outside_its_write_set(world, monkeypatch, tool_name, index):
    assert_apply_keeps_its_write_set(world, monkeypatch, tool_name, index)


def _bad_inputs(world, tool_name, good):
    """(label, input) pairs that must all be refused for this tool."""
    tool = registry.write_tool(tool_name)
    cases = [("not an object", ["x"]), ("unknown field", {**good, "bogus_field": 1})]
    props = tool.schema["properties"]
    for name in good:
        wrong = "text" if props[name].get("type") != "string" else 12345
        cases.append((f"{name} wrong type", {**good, name: wrong}))
    for name in tool.schema.get("required", []):
        cases.append((f"missing {name}", {k: v for k, v in good.items() if k != name}))
    if "creature_id" in good:
        cases.append(("unknown creature", {**good, "creature_id": 999_999}))
        cases.append(("foreign creature", {**good, "creature_id": world.foreign.pk}))
    if "creature_ids" in good:
        cases.append(("foreign creature", {**good, "creature_ids": [world.foreign.pk]}))
    if not good:
        cases.append(("huge number", {"x": 10**30}))
    return cases


def assert_bad_inputs_refused(world, tool_name: str) -> None:
    good = example_input(world, registry.write_tool(tool_name))
    for label, data in _bad_inputs(world, tool_name, good):
        before = dump(world.campaign)
        foreign_before = dump(world.foreign.campaign)
        row = call(world, tool_name, data)
        assert row.status == ToolInvocation.Status.FAILED, label
        assert row.error, label
        assert dump(world.campaign) == before, label
        assert dump(world.foreign.campaign) == foreign_before, label


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
def test_bad_input_leaves_a_failed_row_and_no_change(world, tool_name):
    assert_bad_inputs_refused(world, tool_name)


def test_foreign_creature_error_names_the_id_and_never_writes_elsewhere(world):
    row = call(world, "modify_creature", {"creature_id": world.foreign.pk, "hp_delta": -3})
    assert row.error == f"No creature with id {world.foreign.pk} in this campaign."
    assert Creature.objects.get(pk=world.foreign.pk).hp == 5


def test_validation_error_says_what_is_wrong(world):
    row = call(world, "move_token", {"creature_id": world.hero.pk, "x": "far", "y": 1})
    assert row.error == "Invalid input: input['x']: 'far' is not of type 'integer'"


def test_damage_is_absorbed_by_temp_hp_and_clamped_at_zero(world):
    call(world, "modify_creature", {"creature_id": world.hero.pk, "temp_hp": 5})
    call(world, "modify_creature", {"creature_id": world.hero.pk, "hp_delta": -8})
    world.hero.refresh_from_db()
    assert (world.hero.hp, world.hero.temp_hp) == (17, 0)
    call(world, "modify_creature", {"creature_id": world.hero.pk, "hp_delta": -500})
    world.hero.refresh_from_db()
    assert world.hero.hp == 0


def test_consuming_more_than_left_is_refused(world):
    row = call(
        world,
        "consume_resource",
        {"creature_id": world.hero.pk, "resource": "spell_slot", "amount": 2},
    )
    assert row.error == "Not enough spell_slot: 1 left, 2 needed."


def test_advance_turn_wraps_into_the_next_round(world):
    call(world, "start_combat", {"creature_ids": [world.hero.pk, world.goblin.pk]})
    rows = [call(world, "advance_turn", {}) for _ in range(2)]
    assert rows[0].result["round"] == 1 and rows[1].result["round"] == 2
    assert rows[1].result["turn_index"] == 0


def test_giving_away_the_last_item_deletes_it_and_revert_brings_it_back(world):
    call(world, "give_item", {"creature_id": world.hero.pk, "item": "torch", "quantity": 1})
    before = dump(world.campaign)
    row = call(world, "give_item", {"creature_id": world.hero.pk, "item": "torch", "quantity": -1})
    assert not world.hero.items.exists()
    invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner)
    assert dump(world.campaign) == before


def test_unknown_tool_is_logged_as_a_failed_row_and_changes_nothing(world):
    before = dump(world.campaign)
    row = call(world, "delete_world", {})
    assert (row.status, row.tool_tier, row.error) == ("failed", "", "Unknown tool 'delete_world'.")
    assert dump(world.campaign) == before


def test_advance_chapter_walks_the_chapters_in_order_and_stops_at_the_last(world):
    titles = []
    for _ in range(3):
        row = call(world, "advance_chapter", {})
        titles.append(row.result.get("title") if row.status == "committed" else row.error)
    assert titles == ["Depths", "End", "There is no next chapter."]


@pytest.mark.parametrize("tool_name,index", example_cases())
def test_apply_looks_up_no_target_that_write_set_already_resolved(world, tool_name, index):
    """Each call's targets are resolved once (`ToolContext.creature` / `once`): whatever
    `authorize` and `write_set` read, `apply` reuses instead of querying again."""
    tool = registry.write_tool(tool_name)
    data = example_input(world, tool, index)
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    ctx = ToolContext(campaign=campaign, actor=world.owner, powers=Powers(gm=True))
    with transaction.atomic():
        with CaptureQueriesContext(connection) as resolving:
            tool.authorize(ctx, data)
            tool.write_set(ctx, data)
        with CaptureQueriesContext(connection) as applying:
            tool.apply(ctx, data)
        transaction.set_rollback(True)
    resolved = {q["sql"] for q in resolving.captured_queries if q["sql"].startswith("SELECT")}
    again = [q["sql"] for q in applying.captured_queries if q["sql"] in resolved]
    assert not again, f"{tool_name} looked up again in apply: {again}"
