"""Tools that act on one creature: damage and healing, spawning, moving, inventory."""

from typing import Any, ClassVar

from ai_tools import entities
from ai_tools.base import EntityMap, Names, Reach, Ref, Tier, ToolContext, ToolError, WriteTool
from ai_tools.registry import register
from ai_tools.tools.schema import CONDITIONS, COORD, DELTA, HP, ID, NAME, obj
from ai_tools.tools.words import cell, change, listing, spoken
from campaigns.models import Creature, InventoryItem
from campaigns.selectors import map_free_cell


def creature_row(logged: EntityMap, pk: Any) -> dict[str, Any]:
    """The creature's fields as logged, whatever facets (`creature:7/vitals`) they are kept in."""
    wanted = entities.key("creature", pk)
    row: dict[str, Any] = {}
    for key, fields in logged.items():
        if entities.root(key) == wanted and isinstance(fields, dict):
            row.update(fields)
    return row


@register
class ModifyCreature(WriteTool):
    """Damage, healing, conditions and death saves: the call most likely to hit the wrong target,
    hence critical."""

    name = "modify_creature"
    tier = Tier.CRITICAL
    reach = Reach.OWN_CHARACTER
    description = (
        "Change a creature's hit points, temporary HP, conditions or death saves. Negative "
        "hp_delta is damage (temporary HP absorbs it first), positive is healing; HP stays "
        "between 0 and max_hp. Give creature_id and at least one change."
    )
    schema = obj(
        {
            "creature_id": ID,
            "hp_delta": DELTA,
            "set_hp": HP,
            "temp_hp": HP,
            "add_conditions": CONDITIONS,
            "remove_conditions": CONDITIONS,
            "death_save": {"enum": ["success", "failure", "reset"]},
        },
        ("creature_id",),
    )
    examples = (
        {
            "creature_id": Ref("goblin"),
            "hp_delta": -5,
            "add_conditions": ["prone"],
            "death_save": "failure",
        },
        {"creature_id": Ref("hero"), "hp_delta": 3},
        {"creature_id": Ref("orc"), "set_hp": 1, "temp_hp": 4},
        {"creature_id": Ref("ally"), "add_conditions": ["poisoned"], "remove_conditions": ["dead"]},
        {"creature_id": Ref("hero"), "death_save": "success"},
    )
    # The creature and its UPDATE (what players may see of its event, a facet of a creature of
    # unknown kind, is read only with the fog in play: not in the example world).
    example_statements = 2
    # At least one of these must be given. Said here and in `validate`, not as a top-level
    # `anyOf` in the schema: the Messages API refuses top-level oneOf/allOf/anyOf.
    CHANGES: ClassVar[tuple[str, ...]] = (
        "hp_delta",
        "set_hp",
        "temp_hp",
        "add_conditions",
        "remove_conditions",
        "death_save",
    )

    def validate(self, data: Any) -> str | None:
        """The schema's rules, then the cross-field one: a call that changes nothing is refused
        (a failed row, nothing mutated) rather than logged as a no-op the table must undo."""
        problem = super().validate(data)
        if problem is None and not any(field in data for field in self.CHANGES):
            return f"input: nothing to change; give at least one of {', '.join(self.CHANGES)}."
        return problem

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [entities.key("creature", ctx.creature(data["creature_id"]).pk, "vitals")]

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        c = ctx.creature(data["creature_id"])
        before = c.hp
        if "set_hp" in data:
            c.hp = data["set_hp"]
        if "temp_hp" in data:
            c.temp_hp = data["temp_hp"]
        delta = data.get("hp_delta", 0)
        if delta < 0:
            absorbed = min(c.temp_hp, -delta)
            c.temp_hp -= absorbed
            c.hp += delta + absorbed
        else:
            c.hp += delta
        c.hp = max(0, min(c.hp, c.max_hp))
        self._apply_conditions(c, data)
        self._apply_death_save(c, data.get("death_save"))
        ctx.save(c, list(entities.CREATURE_VITALS))
        return {
            "creature_id": c.pk,
            "name": c.name,
            "hp": c.hp,
            "hp_before": before,
            "temp_hp": c.temp_hp,
            "conditions": c.conditions,
        }

    @staticmethod
    def _apply_conditions(c: Creature, data: dict[str, Any]) -> None:
        conditions = [x for x in c.conditions if x not in data.get("remove_conditions", [])]
        for condition in data.get("add_conditions", []):
            if condition not in conditions:
                conditions.append(condition)
        c.conditions = conditions

    @staticmethod
    def _apply_death_save(c: Creature, death_save: str | None) -> None:
        if death_save == "reset":
            c.death_save_successes = c.death_save_failures = 0
        elif death_save == "success":
            c.death_save_successes = min(3, c.death_save_successes + 1)
        elif death_save == "failure":
            c.death_save_failures = min(3, c.death_save_failures + 1)

    def summarize(self, data: dict[str, Any]) -> str:
        parts = []
        if "hp_delta" in data:
            parts.append(f"HP {data['hp_delta']:+d}")
        if "set_hp" in data:
            parts.append(f"HP = {data['set_hp']}")
        if "temp_hp" in data:
            parts.append(f"temp HP = {data['temp_hp']}")
        parts += [f"+{x}" for x in data.get("add_conditions", [])]
        parts += [f"-{x}" for x in data.get("remove_conditions", [])]
        if "death_save" in data:
            parts.append(f"death save {data['death_save']}")
        return f"creature {data['creature_id']}: " + ", ".join(parts)

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        """HP as it really went, clamps included ("Goblin takes 4 damage (7 → 3)"), from the
        logged before and after; the input's own numbers where those are missing."""
        who = name(data["creature_id"])
        was = creature_row(before, data["creature_id"])
        now = creature_row(after, data["creature_id"])
        temp = change(was.get("temp_hp"), now.get("temp_hp"))
        return [
            *self._hp_lines(who, data, was.get("hp"), now.get("hp")),
            *([f"{who} has {data['temp_hp']} temporary HP{temp}"] if "temp_hp" in data else []),
            *self._condition_lines(who, data, was, now),
        ]

    @staticmethod
    def _hp_lines(who: str, data: dict[str, Any], was: Any, now: Any) -> list[str]:
        if isinstance(was, int) and isinstance(now, int) and was != now:
            if now < was:
                return [f"{who} takes {was - now} damage ({was} → {now})"]
            return [f"{who} heals {now - was} HP ({was} → {now})"]
        if "hp_delta" in data and data["hp_delta"] < 0:
            return [f"{who} takes {-data['hp_delta']} damage"]
        if "hp_delta" in data and data["hp_delta"] > 0:
            return [f"{who} heals {data['hp_delta']} HP"]
        if "set_hp" in data:
            return [f"{who} is set to {data['set_hp']} HP"]
        return []

    @staticmethod
    def _condition_lines(
        who: str, data: dict[str, Any], was: dict[str, Any], now: dict[str, Any]
    ) -> list[str]:
        lines = []
        if data.get("add_conditions"):
            lines.append(f"{who} is now {listing([spoken(c) for c in data['add_conditions']])}")
        if data.get("remove_conditions"):
            gone = listing([spoken(c) for c in data["remove_conditions"]])
            lines.append(f"{who} is no longer {gone}")
        save = data.get("death_save")
        if save == "reset":
            lines.append(f"{who}'s death saves are reset")
        elif save in ("success", "failure"):
            field = f"death_save_{'successes' if save == 'success' else 'failures'}"
            count = now.get(field)
            tally = f" ({count} of 3)" if isinstance(count, int) else ""
            verb = "succeeds on" if save == "success" else "fails"
            lines.append(f"{who} {verb} a death save{tally}")
        return lines


@register
class SpawnCreature(WriteTool):
    """Adds an NPC or monster; reverting removes it again."""

    name = "spawn_creature"
    tier = Tier.MEDIUM
    description = (
        "Add an NPC or monster to the scene at an optional map position (left out: the free "
        "cell nearest the map's top-left corner)."
    )
    schema = obj(
        {
            "name": NAME,
            "kind": {"enum": ["npc", "monster"]},
            "hp": HP,
            "max_hp": {**HP, "minimum": 1},
            "x": COORD,
            "y": COORD,
        },
        ("name", "kind", "hp"),
    )
    examples = (
        {"name": "Skeleton", "kind": "monster", "hp": 13, "x": 3, "y": 4},
        {"name": "Innkeeper", "kind": "npc", "hp": 4, "max_hp": 6},
    )
    # The creature's INSERT and its read-back (what players may see of it, a non-PC whole, is
    # read only with the fog in play: not in the example world).
    example_statements = 2

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        max_hp = data.get("max_hp", max(1, data["hp"]))
        if data["hp"] > max_hp:
            raise ToolError(f"hp {data['hp']} is above max_hp {max_hp}.")
        if "x" in data and "y" in data:
            x, y = data["x"], data["y"]
        else:  # no place said: the free cell nearest the one half said, never a stack
            x, y = map_free_cell(campaign=ctx.campaign, near=(data.get("x", 0), data.get("y", 0)))
        creature = Creature.objects.create(
            campaign=ctx.campaign,
            name=data["name"],
            kind=data["kind"],
            hp=data["hp"],
            max_hp=max_hp,
            x=x,
            y=y,
        )
        ctx.record_created("creature", creature.pk)
        return {"creature_id": creature.pk, "name": creature.name}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"spawn {data['kind']} {data['name']} ({data['hp']} HP)"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        where = f" at {cell(data['x'], data['y'])}" if "x" in data and "y" in data else ""
        kind = "an NPC" if data["kind"] == "npc" else "a monster"
        hp = f"{data['hp']}/{data['max_hp']}" if "max_hp" in data else str(data["hp"])
        return [f"{data['name']} appears{where}: {kind} with {hp} HP"]


@register
class MoveToken(WriteTool):
    """Moves a token on the battle map."""

    name = "move_token"
    idempotent = True
    tier = Tier.LOW
    reach = Reach.OWN_CHARACTER
    description = "Move a creature's token to map cell (x, y)."
    schema = obj({"creature_id": ID, "x": COORD, "y": COORD}, ("creature_id", "x", "y"))
    examples = ({"creature_id": Ref("hero"), "x": 3, "y": 4},)
    # The creature and its UPDATE (what players may see of its event, a facet of a creature of
    # unknown kind, is read only with the fog in play: not in the example world).
    example_statements = 2

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [entities.key("creature", ctx.creature(data["creature_id"]).pk, "position")]

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        c = ctx.creature(data["creature_id"])
        before = [c.x, c.y]
        c.x, c.y = data["x"], data["y"]
        ctx.save(c, ["x", "y"])
        return {"creature_id": c.pk, "from": before, "to": [c.x, c.y]}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"move creature {data['creature_id']} to {data['x']},{data['y']}"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        was = creature_row(before, data["creature_id"])
        known = "x" in was and "y" in was and name.sees_at(data["creature_id"], was["x"], was["y"])
        start = f" from {cell(was['x'], was['y'])}" if known else ""
        return [f"{name(data['creature_id'])} moves{start} to {cell(data['x'], data['y'])}"]


@register
class GiveItem(WriteTool):
    """Adds or (with a negative quantity) removes inventory; a player changes their own
    character's."""

    name = "give_item"
    tier = Tier.MEDIUM
    reach = Reach.OWN_CHARACTER
    description = "Give a creature a quantity of an item; a negative quantity takes items away."
    schema = obj(
        {
            "creature_id": ID,
            "item": NAME,
            "quantity": {
                "type": "integer",
                "minimum": -10_000,
                "maximum": 10_000,
                "not": {"const": 0},
            },
        },
        ("creature_id", "item", "quantity"),
    )
    examples = (
        {"creature_id": Ref("hero"), "item": "rope", "quantity": 2},
        {"creature_id": Ref("goblin"), "item": "gem", "quantity": 1},
    )
    example_statements = 4  # the creature, the item it has (none), the item's INSERT, read back

    @staticmethod
    def _item(ctx: ToolContext, data: dict[str, Any]) -> InventoryItem | None:
        creature = ctx.creature(data["creature_id"])
        return ctx.once(
            "item",
            lambda: InventoryItem.objects.filter(creature=creature, name=data["item"]).first(),
        )

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        item = self._item(ctx, data)
        return [entities.key("item", item.pk)] if item else []

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        creature = ctx.creature(data["creature_id"])
        item = self._item(ctx, data)
        have = item.quantity if item else 0
        total = have + data["quantity"]
        if total < 0:
            raise ToolError(f"{creature.name} has only {have} × {data['item']}.")
        if item is None:
            item = InventoryItem.objects.create(
                campaign=ctx.campaign, creature=creature, name=data["item"], quantity=total
            )
            ctx.record_created("item", item.pk)
        elif total == 0:
            item.delete()
        else:
            item.quantity = total
            ctx.save(item, ["quantity"])
        return {"creature_id": creature.pk, "item": data["item"], "quantity": total}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"{data['quantity']:+d} × {data['item']} for creature {data['creature_id']}"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        """ "Thorin gets 2 × healing potion (1 → 3)": the item as people say it, and how many
        the creature has before and after where the log holds it."""
        who, count, item = name(data["creature_id"]), data["quantity"], spoken(data["item"])
        had = [f for _, f in entities.entries(before, "item")]
        has = [f for _, f in entities.entries(after, "item")]
        was = had[0]["quantity"] if had and had[0] else 0 if after else None
        now = has[0]["quantity"] if has and has[0] else 0 if has else None
        if count < 0:
            return [f"{who} loses {-count} × {item}{change(was, now)}"]
        return [f"{who} gets {count} × {item}{change(was, now)}"]
