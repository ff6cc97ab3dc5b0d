"""Property tests: any sequence of tool calls (drawn from every registered tool's declared
examples), reverted newest first, restores the world byte for byte; random single reverts either
succeed or name the later invocations in the way, and never corrupt what a full rewind gets back
to."""

from functools import partial
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_tools import registry
from ai_tools.base import Ref, resolve_refs
from audit.models import ToolInvocation
from audit.services import invocation_dispatch, invocation_revert
from campaigns.models import Creature
from core.errors import CallRefused, Conflict
from tests.ai_tools.contract import assert_write_set_kept, record_apply_changes
from tests.ai_tools.examples import world_pk
from tests.conftest import World, build_world, dump, rolled_back


def drawn_pk(data: st.DataObject, world: World, ref: Ref) -> Any:
    """A creature reference becomes any creature of the campaign as it is at this step (spawned
    ones included); other references are the world's own."""
    if not isinstance(getattr(world, ref.name), Creature):
        return world_pk(world, ref)
    creatures = Creature.objects.filter(campaign=world.campaign)
    return data.draw(st.sampled_from(sorted(creatures.values_list("pk", flat=True))))


def drawn_input(data: st.DataObject, world: World, tool_name: str) -> dict[str, Any]:
    """One of the tool's declared examples, its creatures drawn from the world."""
    example = data.draw(st.sampled_from(registry.write_tool(tool_name).examples), label="example")
    return resolve_refs(example, partial(drawn_pk, data, world))


PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def play(
    data: st.DataObject, world: World, tools: list[str], changes: list | None = None
) -> list[ToolInvocation]:
    """Random calls; with `changes` (from `record_apply_changes`), each committed call is also
    held to its write set: its `apply` changed nothing its logged write set does not name."""
    rows = []
    for _ in range(data.draw(st.integers(1, 30), label="calls")):
        name = data.draw(st.sampled_from(tools), label="tool")
        actor = data.draw(st.sampled_from([world.owner, world.player]), label="actor")
        try:
            row = invocation_dispatch(
                campaign=world.campaign,
                actor=actor,
                tool_name=name,
                input=drawn_input(data, world, name),
            )
        except CallRefused as refused:  # least privilege: a failed row, nothing changed
            row = ToolInvocation.objects.get(pk=refused.invocation)
        if changes is not None:
            assert_write_set_kept(row, changes)
        rows.append(row)
    return rows


def write_tool_names() -> list[str]:
    return [tool.name for tool in registry.write_tools()]


def rewind(world: World) -> None:
    for row in ToolInvocation.objects.filter(campaign=world.campaign, status="committed"):
        outcome = invocation_revert(
            campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
        )
        assert outcome.reverted, outcome.skip_reason


def play_and_rewind(
    data: st.DataObject, tools: list[str], changes: list | None = None
) -> list[ToolInvocation]:
    """Any sequence of calls of these tools, reverted newest first, restores the world."""
    with rolled_back():
        world = build_world()
        start = dump(world.campaign)
        rows = play(data, world, tools, changes)
        assert {r.status for r in rows} <= {"committed", "failed"}
        rewind(world)  # the log's default ordering is newest first
        assert dump(world.campaign) == start
    return rows


@PROPERTY_SETTINGS
@given(data=st.data())
def test_reverting_newest_first_restores_the_world_byte_for_byte(db, data, monkeypatch):
    """Each call on the way is also held to its write set, on states the examples alone never
    reach (a creature already dead, an encounter already running, a spawned creature)."""
    play_and_rewind(data, write_tool_names(), record_apply_changes(monkeypatch))


@PROPERTY_SETTINGS
@given(data=st.data())
def test_random_single_reverts_succeed_or_name_later_conflicts(db, data):
    with rolled_back():
        world = build_world()
        start = dump(world.campaign)
        play(data, world, write_tool_names())
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
