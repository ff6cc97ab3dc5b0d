"""The dice: the `roll_dice` tool's logic for everyone, advantage and disadvantage on top, and
every roll (the GM's too) kept and announced."""

import random

import pytest

from ai_tools import registry
from ai_tools.base import ToolContext, ToolError
from ai_tools.dice import dice_roll, roll
from ai_tools.tools import read
from campaigns.models import DiceRoll
from tests.conftest import World


class Scripted(random.Random):
    """Dice that fall as told, in order."""

    def __init__(self, *faces: int) -> None:
        super().__init__()
        self.faces = list(faces)

    def randint(self, a: int, b: int) -> int:
        face = self.faces.pop(0)
        assert a <= face <= b
        return face


def test_a_normal_roll_keeps_each_die_and_the_modifier(world: World):
    made = dice_roll(
        campaign=world.campaign, author=world.player, formula="2d6+3", rng=Scripted(4, 2)
    )
    row = DiceRoll.objects.get()
    assert made == row
    assert (row.formula, row.mode, row.dice, row.discarded) == ("2d6+3", "normal", [4, 2], [])
    assert (row.modifier, row.total, row.author, row.by_gm, row.turn) == (
        3,
        9,
        world.player,
        False,
        None,
    )


@pytest.mark.parametrize(
    ("mode", "kept", "other", "total"),
    [("advantage", [17], [9], 19), ("disadvantage", [9], [17], 11)],
)
def test_advantage_keeps_the_higher_total_and_disadvantage_the_lower(
    world: World, mode: str, kept: list[int], other: list[int], total: int
):
    row = dice_roll(
        campaign=world.campaign,
        author=world.player,
        formula="d20+2",
        mode=mode,
        rng=Scripted(9, 17),
    )
    assert (row.mode, row.dice, row.discarded, row.total) == (mode, kept, other, total)


@pytest.mark.parametrize(
    ("formula", "problem"),
    [
        ("fireball", "Cannot read dice expression 'fireball'; use e.g. '2d6+3'."),
        ("51d6", "Dice must be 1-50 dice of 2-100 sides."),
        ("1d101", "Dice must be 1-50 dice of 2-100 sides."),
        ("1d1", "Dice must be 1-50 dice of 2-100 sides."),
        ("0d6", "Dice must be 1-50 dice of 2-100 sides."),
        ("100d100", "Dice must be 1-50 dice of 2-100 sides."),  # too big, not unreadable
        ("999999d6", "Dice must be 1-50 dice of 2-100 sides."),
        ("2d100000", "Dice must be 1-50 dice of 2-100 sides."),
    ],
)
def test_a_formula_the_dice_cannot_roll_is_refused_and_nothing_is_kept(
    world: World, events, formula: str, problem: str
):
    for mode in DiceRoll.Mode.values:
        with pytest.raises(ToolError) as refused:
            dice_roll(campaign=world.campaign, author=world.player, formula=formula, mode=mode)
        assert str(refused.value) == problem
    assert not DiceRoll.objects.exists()
    assert events == []


# Digits and spaces of other scripts, which `int()` and an unflagged `\d`/`\s` would take.
NOT_ASCII = [
    "１d６",  # fullwidth
    "٢d٦",  # Arabic-Indic
    "२d६+१",  # Devanagari
    "2d６+3",  # one fullwidth digit among ASCII ones
    "d20+٣",  # in the modifier only
    "d20+²",  # superscript
    "2d6\u00a0+3",  # a no-break space
    "d20\u3000",  # an ideographic space
]


@pytest.mark.parametrize("formula", NOT_ASCII)
def test_digits_and_spaces_other_than_ascii_are_refused_and_nothing_is_kept(
    world: World, events, formula: str
):
    with pytest.raises(ToolError) as refused:
        dice_roll(campaign=world.campaign, author=world.player, formula=formula)
    assert str(refused.value) == f"Cannot read dice expression {formula!r}; use e.g. '2d6+3'."
    assert not DiceRoll.objects.exists()
    assert events == []


@pytest.mark.parametrize("formula", NOT_ASCII)
def test_the_gm_tool_refuses_them_too(world: World, formula: str):
    tool = registry.read_tool("roll_dice")
    with pytest.raises(ToolError, match="Cannot read dice expression"):
        tool.run(ToolContext(world.campaign, world.player, world.turn()), {"expression": formula})
    assert not DiceRoll.objects.exists()


def test_the_widest_rolls_within_the_limits_are_rolled(world: World):
    assert len(dice_roll(campaign=world.campaign, author=world.player, formula="50d100").dice) == 50
    assert dice_roll(campaign=world.campaign, author=world.player, formula="d2").total in (1, 2)


def test_a_roll_is_announced_to_the_table_after_commit(
    world: World, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        row = dice_roll(
            campaign=world.campaign,
            author=world.player,
            formula="d20",
            mode="advantage",
            rng=Scripted(3, 15),
        )
    world.campaign.refresh_from_db()
    (sent,) = events
    assert sent["seq"] == world.campaign.event_seq
    assert (sent["type"], sent["source"], sent["turn"]) == ("dice_rolled", "user", None)
    assert sent["data"] == {
        "id": row.pk,
        "formula": "d20",
        "mode": "advantage",
        "dice": [15],
        "discarded": [3],
        "modifier": 0,
        "total": 15,
        "author": "player",
        "by_gm": False,
    }


def test_the_gm_roll_dice_tool_rolls_the_same_dice_and_shows_its_roll_in_its_turn(
    world: World, events, django_capture_on_commit_callbacks
):
    turn = world.turn()
    tool = registry.read_tool("roll_dice")
    with django_capture_on_commit_callbacks(execute=True):
        result = tool.run(ToolContext(world.campaign, world.player, turn), {"expression": "3d4-1"})
    row = DiceRoll.objects.get()
    assert result == {
        "expression": "3d4-1",
        "rolls": row.dice,
        "modifier": -1,
        "total": row.total,
    }
    assert row.total == sum(row.dice) - 1 and len(row.dice) == 3
    assert (row.by_gm, row.author, row.turn, row.mode) == (True, None, turn, "normal")
    assert [(e["type"], e["source"], e["turn"]) for e in events] == [
        ("dice_rolled", "ai_tool_execution", turn.pk)
    ]


def test_the_gm_tool_and_the_players_roll_with_one_function_not_a_copy():
    assert read.roll is roll
