"""Resources: spending them and resting to get them back."""

from typing import Any

from ai_tools import entities
from ai_tools.base import EntityMap, Names, Reach, Ref, Tier, ToolContext, ToolError, WriteTool
from ai_tools.registry import register
from ai_tools.tools.schema import CREATURE_IDS, ID, NAME, obj
from ai_tools.tools.words import change, listing, spoken
from campaigns.models import Creature, Resource, ResourceEvent


@register
class ConsumeResource(WriteTool):
    """Spends a resource (spell slot, ki, hit die). A player may spend their own character's."""

    name = "consume_resource"
    tier = Tier.HIGH
    reach = Reach.OWN_CHARACTER
    description = "Spend `amount` of a creature's named resource. Fails if it has not enough."
    schema = obj(
        {
            "creature_id": ID,
            "resource": NAME,
            "amount": {"type": "integer", "minimum": 1, "maximum": 1000},
        },
        ("creature_id", "resource", "amount"),
    )
    examples = ({"creature_id": Ref("hero"), "resource": "spell_slot", "amount": 1},)
    # The creature, the resource, its UPDATE, the resource event's INSERT, read back.
    example_statements = 5

    def _resource(self, ctx: ToolContext, data: dict[str, Any]) -> Resource:
        creature = ctx.creature(data["creature_id"])
        resource = ctx.once(
            "resource",
            lambda: Resource.objects.filter(creature=creature, name=data["resource"]).first(),
        )
        if resource is None:
            raise ToolError(f"{creature.name} has no resource named {data['resource']!r}.")
        return resource

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        return [entities.key("resource", self._resource(ctx, data).pk)]

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        resource = self._resource(ctx, data)
        if resource.current < data["amount"]:
            raise ToolError(
                f"Not enough {resource.name}: {resource.current} left, {data['amount']} needed."
            )
        resource.current -= data["amount"]
        ctx.save(resource, ["current"])
        event = ResourceEvent.objects.create(
            campaign=ctx.campaign, resource=resource, delta=-data["amount"], reason="consumed"
        )
        ctx.record_created("resource_event", event.pk)
        return {"resource": resource.name, "current": resource.current, "maximum": resource.maximum}

    def summarize(self, data: dict[str, Any]) -> str:
        return f"creature {data['creature_id']} spends {data['amount']} × {data['resource']}"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        spent = spoken(data["resource"])
        was = entities.fields_of(before, "resource").get("current")
        now = entities.fields_of(after, "resource").get("current")
        left = f" ({was} → {now} left)" if isinstance(was, int) and isinstance(now, int) else ""
        return [f"{name(data['creature_id'])} uses {data['amount']} × {spent}{left}"]


@register
class Rest(WriteTool):
    """Short or long rest. Without creature_ids it rests every PC the call's powers reach: all
    of them for the GM, a player's own characters otherwise (least privilege)."""

    name = "rest"
    idempotent = True
    tier = Tier.HIGH
    reach = Reach.OWN_CHARACTER
    description = (
        "The party rests. A short rest restores short-rest resources; a long rest restores all "
        "rechargeable resources, hit points, and clears temporary HP and death saves."
    )
    schema = obj(
        {
            "kind": {"enum": ["short", "long"]},
            "creature_ids": CREATURE_IDS,
        },
        ("kind",),
    )
    examples = ({"kind": "long"}, {"kind": "long", "creature_ids": [Ref("hero")]})
    # The party's PCs (two) and their resources (four); an UPDATE and a resource event's INSERT
    # per resource, an UPDATE per PC; the four events read back (what players may see of the
    # PCs' events, facets of creatures of unknown kind, is read only with the fog in play: not
    # in the example world).
    example_statements = 16

    def targets(self, ctx: ToolContext, data: dict[str, Any]) -> list[Creature]:
        return self._creatures(ctx, data)

    def _creatures(self, ctx: ToolContext, data: dict[str, Any]) -> list[Creature]:
        """The named creatures, or else every PC the call's powers reach (least privilege)."""
        if "creature_ids" in data:
            return [ctx.creature(cid) for cid in data["creature_ids"]]
        pcs = Creature.objects.filter(campaign_id=ctx.campaign.pk, kind=Creature.Kind.PC)
        return ctx.once("party", lambda: [c for c in pcs.order_by("pk") if ctx.may_act_on(c)])

    @staticmethod
    def _recharges(kind: str) -> list[str]:
        if kind == "short":
            return [Resource.Recharge.SHORT_REST]
        return [Resource.Recharge.SHORT_REST, Resource.Recharge.LONG_REST]

    def _resources(
        self, ctx: ToolContext, data: dict[str, Any], creatures: list[Creature]
    ) -> list[Resource]:
        recharges = self._recharges(data["kind"])
        return ctx.once(
            "resources",
            lambda: list(
                Resource.objects.filter(creature__in=creatures, recharge__in=recharges).order_by(
                    "pk"
                )
            ),
        )

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        creatures = self._creatures(ctx, data)
        keys = [entities.key("resource", r.pk) for r in self._resources(ctx, data, creatures)]
        if data["kind"] == "long":
            keys += [entities.key("creature", c.pk, "vitals") for c in creatures]
        return keys

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        creatures = self._creatures(ctx, data)
        if not creatures:
            raise ToolError("Nobody to rest: there are no player characters you may manage.")
        restored = []
        for resource in self._resources(ctx, data, creatures):
            gained = resource.maximum - resource.current
            if gained <= 0:
                continue
            resource.current = resource.maximum
            ctx.save(resource, ["current"])
            event = ResourceEvent.objects.create(
                campaign=ctx.campaign,
                resource=resource,
                delta=gained,
                reason=f"{data['kind']} rest",
            )
            ctx.record_created("resource_event", event.pk)
            restored.append(
                {"resource": resource.name, "creature_id": resource.creature_id, "gained": gained}
            )
        if data["kind"] == "long":
            for creature in creatures:
                creature.hp, creature.temp_hp = creature.max_hp, 0
                creature.death_save_successes = creature.death_save_failures = 0
                ctx.save(creature, list(entities.CREATURE_VITALS))
        return {"kind": data["kind"], "creatures": [c.pk for c in creatures], "restored": restored}

    def summarize(self, data: dict[str, Any]) -> str:
        who = ", ".join(map(str, data.get("creature_ids", []))) or "the party"
        return f"{data['kind']} rest for {who}"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        """Who rests, then what it gave back: each creature's HP and each resource, before →
        after, as the log holds them."""
        ids = data.get("creature_ids") or []
        who = listing([name(pk) for pk in ids]) if ids else "The party"
        lines = [f"{who} take{'' if len(ids) > 1 else 's'} a {data['kind']} rest"]
        for pk, now in entities.entries(after, "creature", "vitals"):
            was = dict(before.get(entities.key("creature", pk, "vitals")) or {})
            if isinstance(now, dict) and was.get("hp") != now.get("hp"):
                lines.append(
                    f"{name(int(pk))} is back to {now['hp']} HP{change(was.get('hp'), now['hp'])}"
                )
        for _, now in entities.entries(after, "resource"):
            if not isinstance(now, dict):
                continue
            was = next(
                (f for k, f in entities.entries(before, "resource") if f and f["id"] == now["id"]),
                {},
            )
            if was.get("current") != now.get("current"):
                whose = name(now["creature_id"])
                lines.append(
                    f"{whose}'s {spoken(now['name'])}: {was.get('current')} → {now['current']}"
                )
        return lines
