"""Dice: one logic for the GM's `roll_dice` tool and the players' rolls from the page, with
advantage and disadvantage on top, and every roll shown in the feed."""

import random
import re
from typing import Any

from ai_tools.base import ToolError
from campaigns.models import Campaign, DiceRoll, Turn
from campaigns.permissions import require_member
from campaigns.security import recording_denials
from campaigns.services import dice_roll_record

# ASCII only: without the flag `\d` takes every script's digits ("１d６", "٢d٦", which int() reads
# as 1d6 and 2d6) and `\s` every space, and the formula would be kept and shown as typed.
# Counts and sides are read with more digits than the limits allow, so "100d100" is refused for
# its size, in the limits' words, not as unreadable.
DICE = re.compile(r"^\s*(\d{0,6})d(\d{1,6})\s*([+-]\s*\d{1,4})?\s*$", re.ASCII)


def roll(expression: str, rng: random.Random) -> dict[str, Any]:
    match = DICE.match(expression)
    if not match:
        raise ToolError(f"Cannot read dice expression {expression!r}; use e.g. '2d6+3'.")
    count, sides = int(match.group(1) or 1), int(match.group(2))
    if not (1 <= count <= 50 and 2 <= sides <= 100):
        raise ToolError("Dice must be 1-50 dice of 2-100 sides.")
    modifier = int((match.group(3) or "0").replace(" ", ""))
    rolls = [rng.randint(1, sides) for _ in range(count)]
    return {
        "expression": expression,
        "rolls": rolls,
        "modifier": modifier,
        "total": sum(rolls) + modifier,
    }


def dice_roll_show(
    *,
    campaign: Campaign,
    author: Any,
    mode: str,
    rolls: list[dict[str, Any]],
    turn: Turn | None = None,
    by_gm: bool = False,
    tool_use_id: str = "",
) -> DiceRoll:
    """Keep what `roll` said in the feed and show it to every client (`dice_rolled`): one roll,
    or under advantage (the higher total kept) or disadvantage (the lower) two of one formula."""
    pick = min if mode == DiceRoll.Mode.DISADVANTAGE else max
    kept = pick(rolls, key=lambda r: r["total"])
    other = [r for r in rolls if r is not kept]
    return dice_roll_record(
        campaign=campaign,
        author=author,
        turn=turn,
        by_gm=by_gm,
        formula=kept["expression"].strip(),
        mode=mode,
        dice=kept["rolls"],
        discarded=other[0]["rolls"] if other else [],
        modifier=kept["modifier"],
        total=kept["total"],
        tool_use_id=tool_use_id,
    )


def dice_roll(
    *,
    campaign: Campaign,
    author: Any,
    formula: str,
    mode: str = DiceRoll.Mode.NORMAL,
    rng: random.Random | None = None,
    ip: str | None = None,
) -> DiceRoll:
    """A member's roll from the page or any client (`require_member`: staff who police the
    table do not play at it; a refusal is recorded from `ip`). Raises ToolError, saying what to
    write instead, on a formula the dice cannot read or beyond their limits (1-50 dice of 2-100
    sides)."""
    with recording_denials(user=author, ip=ip):
        require_member(campaign=campaign, user=author, action="dice_roll")
    mode = DiceRoll.Mode(mode)
    rng = rng or random.SystemRandom()
    times = 1 if mode == DiceRoll.Mode.NORMAL else 2
    rolls = [roll(formula, rng) for _ in range(times)]
    return dice_roll_show(campaign=campaign, author=author, mode=mode, rolls=rolls)
