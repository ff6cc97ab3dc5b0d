"""The `watchful` policy, the default for new campaigns (docs/architecture.md#approval-fatigue):
the ending always, a critical call on a player's character, and the adaptive record; every
other call runs at once, with no statement of its own."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import InvocationOrigin, ToolInvocation
from campaigns.models import Campaign
from tests.conftest import call

Status = ToolInvocation.Status


@pytest.fixture
def watchful(world):
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="watchful")
    world.campaign.refresh_from_db()
    return world


def gm_call(world, tool, data):
    return call(
        world,
        tool,
        data,
        actor=world.player,
        turn=world.turn(world.player),
        source=InvocationOrigin.GM,
        model="anthropic/claude-sonnet-4-5",
    )


def test_a_blow_to_a_monster_runs_at_once(watchful):
    row = gm_call(watchful, "modify_creature", {"creature_id": watchful.goblin.pk, "hp_delta": -3})
    assert row.status == Status.COMMITTED


def test_a_blow_to_a_player_character_waits_and_says_why(watchful):
    row = gm_call(watchful, "modify_creature", {"creature_id": watchful.ally.pk, "hp_delta": -3})
    assert row.status == Status.AWAITING_APPROVAL
    assert row.preview["reason"] == (
        "modify_creature is a critical call on Lia, a player's character: this table approves "
        "those, and their player may object."
    )


def test_the_ending_always_waits(watchful):
    row = gm_call(watchful, "end_adventure", {"summary": "The end."})
    assert row.status == Status.AWAITING_APPROVAL
    assert "always approves it" in row.preview["reason"]


@pytest.mark.parametrize(
    ("tool", "data"),
    [
        ("start_combat", "fight"),
        ("end_combat", None),
        ("consume_resource", "slot"),
        ("move_token", "move"),
    ],
)
def test_the_rest_runs_at_once(watchful, tool, data):
    world = watchful
    inputs = {
        "fight": {
            "creature_ids": [world.hero.pk, world.goblin.pk],
            "initiative": {str(world.hero.pk): 12, str(world.goblin.pk): 9},
        },
        "slot": {"creature_id": world.hero.pk, "resource": "spell_slot", "amount": 1},
        "move": {"creature_id": world.hero.pk, "x": 3, "y": 3},
        None: {},
    }
    if tool == "end_combat":
        gm_call(world, "start_combat", inputs["fight"])
    row = gm_call(world, tool, inputs[data])
    assert row.status == Status.COMMITTED, row.error


def test_an_unknown_creature_fails_as_it_would_without_the_policy(watchful):
    row = gm_call(watchful, "modify_creature", {"creature_id": 10**9, "hp_delta": -3})
    assert row.status == Status.FAILED and "No creature" in row.error


def test_the_player_character_test_costs_no_statement(watchful):
    """It reads the creature through the call's context, which the tool reuses: a blow to a
    monster costs what it does without approval plus the adaptive record's two index range
    scans, as a call under `adaptive` that is not held does."""
    turn = watchful.turn(watchful.player)

    def count(policy, tool, data):
        Campaign.objects.filter(pk=watchful.campaign.pk).update(approval_policy=policy)
        watchful.campaign.refresh_from_db()
        with CaptureQueriesContext(connection) as ctx:
            row = call(watchful, tool, data, actor=watchful.player, turn=turn)
        assert row.status == Status.COMMITTED
        return len(ctx.captured_queries)

    hit = {"creature_id": watchful.goblin.pk, "hp_delta": -1}
    move = {"creature_id": watchful.goblin.pk, "x": 4, "y": 4}
    assert count("watchful", "modify_creature", hit) == count("none", "modify_creature", hit) + 2
    assert count("watchful", "move_token", move) == count("adaptive", "move_token", move)
