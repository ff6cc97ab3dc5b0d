"""Adaptive approval: a (model, tool) pair whose recent calls keep being undone needs a human,
from exactly the threshold, and no longer once its record improves; campaign-wide while the
campaign has enough calls, across all tables otherwise."""

from typing import Any

import pytest

from ai_tools import registry
from audit.models import ToolInvocation
from audit.policy import adaptive_approval_reason, needs_approval
from audit.services import invocation_dispatch, invocation_revert
from audit.services.approval import invocation_approve
from campaigns.models import Campaign
from campaigns.services import campaign_create, creature_create
from tests.conftest import World

SONNET = "anthropic/claude-sonnet-4-5"


def moves(campaign: Campaign, actor: Any, n: int, model: str = SONNET) -> list[ToolInvocation]:
    """`n` committed move_token calls by `model` in `campaign`, oldest first; a call the
    adaptive rule holds is approved by the owner, and the row it ran as is the one returned."""
    creature = campaign.creatures.first()
    rows = []
    for i in range(n):
        row = invocation_dispatch(
            campaign=campaign,
            actor=actor,
            tool_name="move_token",
            input={"creature_id": creature.pk, "x": i % 30, "y": 1},
            model=model,
        )
        if row.status == ToolInvocation.Status.AWAITING_APPROVAL:
            row = invocation_approve(
                campaign_id=campaign.pk, invocation_id=row.pk, user=campaign.owner
            ).ran
        rows.append(row)
    assert {row.status for row in rows} == {"committed"}
    return rows


def undo_newest(rows: list[ToolInvocation], k: int, user: Any) -> None:
    """Revert the newest `k` of `rows`, newest first (they all moved one token)."""
    for row in reversed(rows[-k:]):
        outcome = invocation_revert(campaign_id=row.campaign_id, invocation_id=row.pk, user=user)
        assert outcome.reverted


def adaptive(world: World) -> Campaign:
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="adaptive")
    world.campaign.refresh_from_db()
    return world.campaign


def second_table(world: World, policy: str = "adaptive") -> Campaign:
    campaign = campaign_create(owner=world.owner, name="Second", approval_policy=policy)
    creature_create(campaign=campaign, by=world.owner, name="Scout", kind="npc", hp=5, max_hp=5)
    return campaign


def test_it_switches_on_at_exactly_the_threshold(world: World):
    campaign = adaptive(world)
    rows = moves(campaign, world.owner, 20)
    undo_newest(rows, 4, world.owner)
    assert adaptive_approval_reason(campaign, SONNET, "move_token") is None
    undo_newest(rows[:-4], 1, world.owner)
    assert adaptive_approval_reason(campaign, SONNET, "move_token") == (
        "move_token by claude-sonnet-4-5: 5 of its last 20 calls were undone"
    )


def test_it_relaxes_when_undone_calls_leave_the_window(world: World):
    campaign = adaptive(world)
    rows = moves(campaign, world.owner, 20)
    undo_newest(rows, 5, world.owner)
    moves(campaign, world.owner, 15)  # the window: 15 new calls and the 5 undone ones
    assert "5 of its last 20" in adaptive_approval_reason(campaign, SONNET, "move_token")
    moves(campaign, world.owner, 1)  # one undone call falls out: 4 of 20
    assert adaptive_approval_reason(campaign, SONNET, "move_token") is None


def test_the_threshold_and_window_are_settings(world: World, settings):
    settings.APPROVAL_ADAPTIVE_WINDOW, settings.APPROVAL_ADAPTIVE_THRESHOLD = 4, 0.5
    campaign = adaptive(world)
    rows = moves(campaign, world.owner, 4)
    undo_newest(rows, 1, world.owner)
    assert adaptive_approval_reason(campaign, SONNET, "move_token") is None
    undo_newest(rows[:-1], 1, world.owner)
    assert adaptive_approval_reason(campaign, SONNET, "move_token") == (
        "move_token by claude-sonnet-4-5: 2 of its last 4 calls were undone"
    )


def test_a_campaign_with_too_few_calls_is_judged_by_the_pairs_record_elsewhere(world: World):
    campaign = adaptive(world)
    moves(campaign, world.owner, 19)  # clean, but one call short of a window of its own
    elsewhere = second_table(world, policy="none")
    undo_newest(moves(elsewhere, world.owner, 20), 5, world.owner)
    assert adaptive_approval_reason(campaign, SONNET, "move_token") == (
        "move_token by claude-sonnet-4-5: 5 of its last 20 calls across all tables were undone"
    )


def test_a_campaign_with_enough_calls_is_judged_by_its_own(world: World):
    campaign = adaptive(world)
    moves(campaign, world.owner, 20)  # a clean record here, before the other table's
    elsewhere = second_table(world)
    undo_newest(moves(elsewhere, world.owner, 20), 10, world.owner)
    assert adaptive_approval_reason(campaign, SONNET, "move_token") is None
    assert "10 of its last 20 calls were undone" in adaptive_approval_reason(
        elsewhere, SONNET, "move_token"
    )


def test_a_pair_with_fewer_calls_than_the_window_counts_the_missing_as_not_undone(
    world: World,
):
    campaign = adaptive(world)
    rows = moves(campaign, world.owner, 5)
    undo_newest(rows, 4, world.owner)
    assert adaptive_approval_reason(campaign, SONNET, "move_token") is None
    undo_newest(rows[:-4], 1, world.owner)
    assert "5 of its last 5 calls" in adaptive_approval_reason(campaign, SONNET, "move_token")


def test_the_record_is_the_pairs_not_the_models_or_the_tools(world: World):
    campaign = adaptive(world)
    undo_newest(moves(campaign, world.owner, 20), 5, world.owner)
    assert adaptive_approval_reason(campaign, "scripted", "move_token") is None
    assert adaptive_approval_reason(campaign, SONNET, "set_scene") is None


@pytest.mark.parametrize("policy", ["none", "critical", "critical_and_high"])
def test_only_the_adaptive_policy_looks_at_the_record(world: World, policy: str):
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy=policy)
    world.campaign.refresh_from_db()
    undo_newest(moves(world.campaign, world.owner, 20), 20, world.owner)
    assert adaptive_approval_reason(world.campaign, SONNET, "move_token") is None
    assert needs_approval(world.campaign, registry.write_tool("move_token"), SONNET) is None


@pytest.mark.parametrize(
    ("policy", "tool", "held"),
    [
        ("none", "modify_creature", False),
        ("critical", "modify_creature", True),
        ("critical", "end_combat", False),
        ("critical_and_high", "end_combat", True),
        ("critical_and_high", "advance_turn", False),
        ("adaptive", "modify_creature", True),
        ("adaptive", "end_combat", False),
    ],
)
def test_the_policy_holds_back_the_tiers_it_names(world, policy, tool, held):
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy=policy)
    world.campaign.refresh_from_db()
    write_tool = registry.write_tool(tool)
    reason = needs_approval(world.campaign, write_tool, SONNET)
    expected = (
        f"{tool} is a {write_tool.tier} tool, and this table approves {write_tool.tier} calls."
    )
    assert reason == (expected if held else None)


def test_under_adaptive_a_low_tier_tool_is_held_for_its_record(world: World):
    campaign = adaptive(world)
    undo_newest(moves(campaign, world.owner, 20), 5, world.owner)
    reason = needs_approval(campaign, registry.write_tool("move_token"), SONNET)
    assert reason == "move_token by claude-sonnet-4-5: 5 of its last 20 calls were undone"


def test_the_rule_costs_at_most_two_queries(world: World, django_assert_max_num_queries):
    campaign = adaptive(world)
    moves(campaign, world.owner, 3)
    with django_assert_max_num_queries(2):
        adaptive_approval_reason(campaign, SONNET, "move_token")
