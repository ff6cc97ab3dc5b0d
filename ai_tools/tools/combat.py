"""Combat: starting and ending the encounter, advancing its turn order."""

from typing import Any

from ai_tools import entities
from ai_tools.base import EntityMap, Names, Reach, Ref, Tier, ToolContext, ToolError, WriteTool
from ai_tools.registry import register
from ai_tools.tools.schema import CREATURE_IDS, obj
from ai_tools.tools.words import listing
from campaigns.models import Creature, Encounter


def active_encounter(ctx: ToolContext) -> Encounter:
    encounter = ctx.once(
        "encounter",
        lambda: Encounter.objects.filter(campaign_id=ctx.campaign.pk, active=True).first(),
    )
    if encounter is None:
        raise ToolError("There is no active combat.")
    return encounter


def combat_slot(ctx: ToolContext) -> str:
    return entities.key("campaign", ctx.campaign.pk, "combat")


@register
class StartCombat(WriteTool):
    """Creates the active encounter and its initiative order. Critical: it changes what every
    later turn means."""

    name = "start_combat"
    tier = Tier.CRITICAL
    description = (
        "Start combat with the given creatures. initiative maps creature ids (as strings) to "
        "initiative results; creatures without one act at 10. Ties keep the listed order."
    )
    schema = obj(
        {
            "creature_ids": CREATURE_IDS,
            "initiative": {
                "type": "object",
                "patternProperties": {
                    "^[0-9]+$": {"type": "integer", "minimum": -10, "maximum": 100}
                },
                "additionalProperties": False,
            },
        },
        ("creature_ids",),
    )
    examples = (
        {"creature_ids": [Ref("hero"), Ref("goblin")], "initiative": {Ref("goblin"): 15}},
        {"creature_ids": [Ref("orc")]},
    )
    # The two creatures, whether combat runs, the encounter's INSERT, the campaign's UPDATE;
    # the encounter read back.
    example_statements = 6

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [combat_slot(ctx)]

    def read_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [entities.key("creature", c.pk) for c in self._creatures(ctx, data)]

    @staticmethod
    def _creatures(ctx: ToolContext, data: dict[str, Any]) -> list[Creature]:
        creatures = [ctx.creature(cid) for cid in data["creature_ids"]]
        unknown = set(data.get("initiative", {})) - {str(c.pk) for c in creatures}
        if unknown:
            raise ToolError(f"initiative names creatures not in combat: {sorted(unknown)}.")
        return creatures

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        if Encounter.objects.filter(campaign_id=ctx.campaign.pk, active=True).exists():
            raise ToolError("Combat is already running; end it first.")
        initiative = data.get("initiative", {})
        creatures = self._creatures(ctx, data)
        order = sorted(
            ({"creature_id": c.pk, "initiative": initiative.get(str(c.pk), 10)} for c in creatures),
            key=lambda entry: -entry["initiative"],
        )
        encounter = Encounter.objects.create(campaign=ctx.campaign, order=order)
        ctx.record_created("encounter", encounter.pk)
        ctx.campaign.active_encounter = encounter
        ctx.save(ctx.campaign, ["active_encounter"])
        return {"encounter_id": encounter.pk, "order": order, "round": 1}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"start combat with creatures {', '.join(map(str, data['creature_ids']))}"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        return [f"Combat starts: {listing([name(pk) for pk in data['creature_ids']])}"]


@register
class EndCombat(WriteTool):
    """Ends the active encounter."""

    name = "end_combat"
    idempotent = True
    tier = Tier.HIGH
    description = "End the active combat."
    schema = obj({})
    examples = ({},)
    example_setup = ("start_combat",)
    example_statements = 3  # the encounter, its UPDATE and the campaign's

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [combat_slot(ctx), entities.key("encounter", active_encounter(ctx).pk)]

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        encounter = active_encounter(ctx)
        encounter.active = False
        ctx.save(encounter, ["active"])
        ctx.campaign.active_encounter = None
        ctx.save(ctx.campaign, ["active_encounter"])
        return {"encounter_id": encounter.pk, "rounds": encounter.round}

    def summarize(self, data: dict[str, Any]) -> str:
        return "end combat"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        return ["Combat ends"]


@register
class AdvanceTurn(WriteTool):
    """Next combatant; the round goes up when the order wraps. A player may end their own
    character's turn (the creature acting now is theirs), as at a table."""

    name = "advance_turn"
    tier = Tier.MEDIUM
    reach = Reach.OWN_CHARACTER
    description = "Advance combat to the next creature in initiative order."
    schema = obj({})
    examples = ({},)
    example_setup = ("start_combat",)
    example_statements = 2  # the encounter and its UPDATE

    def targets(self, ctx: ToolContext, data: dict[str, Any]) -> list[Creature]:
        encounter = active_encounter(ctx)
        if not 0 <= encounter.turn_index < len(encounter.order):
            raise ToolError("No creature is acting now.")
        return [ctx.creature(encounter.order[encounter.turn_index]["creature_id"])]

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [entities.key("encounter", active_encounter(ctx).pk)]

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        encounter = active_encounter(ctx)
        if not encounter.order:
            raise ToolError("The combat has no combatants.")
        encounter.turn_index += 1
        if encounter.turn_index >= len(encounter.order):
            encounter.turn_index = 0
            encounter.round += 1
        ctx.save(encounter, ["turn_index", "round"])
        current = encounter.order[encounter.turn_index]["creature_id"]
        return {
            "round": encounter.round,
            "turn_index": encounter.turn_index,
            "creature_id": current,
        }

    def summarize(self, data: dict[str, Any]) -> str:
        return "next combatant"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        return ["The next combatant's turn"]
