"""Combat: starting and ending the encounter, advancing its turn order."""

from typing import Any

from ai_tools import entities
from ai_tools.base import EntityMap, Names, Reach, Ref, Tier, ToolContext, ToolError, WriteTool
from ai_tools.registry import register
from ai_tools.tools.schema import CREATURE_IDS, obj
from ai_tools.tools.words import counted
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
        self._creatures(ctx, data)
        order = self.initiative_order(data)
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
        """ "Combat starts: Osric 20, Wren 18, Goblin 12 — in that order": the order as the
        encounter holds it, or as the input makes it (a held call's, a failed one's)."""
        order = entities.fields_of(after, "encounter").get("order")
        if not isinstance(order, list):
            order = self.initiative_order(data)
        shown = ", ".join(f"{name(e['creature_id'])} {e['initiative']}" for e in order)
        return [f"Combat starts: {shown}{' — in that order' if len(order) > 1 else ''}"]

    @staticmethod
    def initiative_order(data: dict[str, Any]) -> list[dict[str, Any]]:
        """The turn order the input makes: highest initiative first, 10 for a creature without
        one, ties in the listed order (as `apply` sorts it)."""
        initiative = data.get("initiative", {})
        return sorted(
            (
                {"creature_id": pk, "initiative": initiative.get(str(pk), 10)}
                for pk in data["creature_ids"]
            ),
            key=lambda entry: -entry["initiative"],
        )


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
        rounds = entities.fields_of(before, "encounter").get("round")
        if isinstance(rounds, int) and rounds > 0:
            return [f"Combat ends after {counted(rounds, 'round')}"]
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
        """Whose turn ends and whose begins, from the encounter before and after."""
        was, now = entities.fields_of(before, "encounter"), entities.fields_of(after, "encounter")
        acting, next_up = _acting(was), _acting(now)
        if next_up is None:
            return ["The next combatant's turn"]
        line = f"{name(next_up)}'s turn"
        if acting is not None:
            line = f"{name(acting)}'s turn ends; {name(next_up)} acts next"
        if was.get("round") != now.get("round") and isinstance(now.get("round"), int):
            line += f", round {now['round']} begins"
        return [line]


def _acting(encounter: dict[str, Any]) -> Any:
    """The creature acting in a logged encounter row, or None."""
    order, index = encounter.get("order"), encounter.get("turn_index")
    if isinstance(order, list) and isinstance(index, int) and 0 <= index < len(order):
        return order[index].get("creature_id")
    return None
