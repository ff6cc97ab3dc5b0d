"""Read-only tools: looking at the table and rolling dice change nothing, so they are free."""

import random
import re
from typing import Any

from ai_tools.base import ReadTool, ToolContext, ToolError
from ai_tools.registry import register
from ai_tools.tools.schema import obj
from campaigns.selectors import campaign_state

DICE = re.compile(r"^\s*(\d{0,2})d(\d{1,3})\s*([+-]\s*\d{1,4})?\s*$")


@register
class GetState(ReadTool):
    name = "get_state"
    description = "Read the current game state: creatures, resources, combat, scene, chapter."
    schema = obj({})

    def run(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        return campaign_state(ctx.campaign)


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


@register
class RollDice(ReadTool):
    name = "roll_dice"
    description = "Roll dice, e.g. '1d20+5' or '2d6'."
    schema = obj({"expression": {"type": "string", "maxLength": 20}}, ("expression",))

    def run(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        return roll(data["expression"], random.SystemRandom())
