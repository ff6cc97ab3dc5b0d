"""Read-only tools: looking at the table and rolling dice change no game state, so they are free."""

import random
from typing import Any

from ai_tools.base import ReadTool, ToolContext
from ai_tools.dice import dice_roll_show, roll
from ai_tools.registry import register
from ai_tools.tools.schema import obj
from campaigns.models import DiceRoll
from campaigns.selectors import campaign_state


@register
class GetState(ReadTool):
    name = "get_state"
    description = "Read the current game state: creatures, resources, combat, scene, chapter."
    schema = obj({})

    def run(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        return campaign_state(ctx.campaign)


@register
class RollDice(ReadTool):
    """The GM's roll is shown in the feed like a player's (`ai_tools.dice`): the table sees
    the dice the narration rests on. Showing it changes no game state, so the tool stays a read."""

    name = "roll_dice"
    description = "Roll dice, e.g. '1d20+5' or '2d6'."
    schema = obj({"expression": {"type": "string", "maxLength": 20}}, ("expression",))

    def run(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        earlier = _rolled_before(ctx)
        if earlier is not None:
            return earlier
        rolled = roll(data["expression"], random.SystemRandom())
        dice_roll_show(
            campaign=ctx.campaign,
            author=None,
            mode=DiceRoll.Mode.NORMAL,
            rolls=[rolled],
            turn=ctx.turn,
            by_gm=True,
            tool_use_id=ctx.tool_use_id,
        )
        return rolled


def _rolled_before(ctx: ToolContext) -> dict[str, Any] | None:
    """What the dice said for this very tool_use on an earlier attempt of the turn (a round
    re-run after a crash): the same answer, not a second roll in the feed."""
    if ctx.turn is None or not ctx.tool_use_id:
        return None
    shown = DiceRoll.objects.filter(turn=ctx.turn, tool_use_id=ctx.tool_use_id).first()
    if shown is None:
        return None
    return {
        "expression": shown.formula,
        "rolls": shown.dice,
        "modifier": shown.modifier,
        "total": shown.total,
    }
