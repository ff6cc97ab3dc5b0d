"""What a tool is. One class per tool declares its name, tier, reach, schema, description and
example inputs, the methods the audited dispatch calls (`authorize`, `write_set`, `snapshot`,
`apply`, `revert`), and its words for people (`summarize`, `describe`): everything a tool is
lives in its class, so a new tool is one file.

The default snapshot/revert capture and restore the entities named by `write_set` (plus what
`apply` reports it created). A tool overrides them only when its pre-state is not a set of rows.
"""

import logging
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import models
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import best_match

from ai_tools import entities
from campaigns.models import Campaign, Creature, Turn
from campaigns.permissions import may_act_on

T = TypeVar("T")

logger = logging.getLogger(__name__)


def _is_integer(checker: Any, instance: Any) -> bool:
    """Only a JSON integer written as one. jsonschema's default also accepts 4.0 (and JSON
    Schema allows it), but a float that passes as an integer ends up in game state and breaks
    everything that formats it as one ("HP 6.0", `{:+d}`)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(checker: Any, instance: Any) -> bool:
    """A finite number and never a boolean (Python's True is an int)."""
    if isinstance(instance, bool) or not isinstance(instance, int | float):
        return False
    return isinstance(instance, int) or math.isfinite(instance)


# The one validator every tool's input goes through (read and write tools alike).
StrictValidator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}
    ),
)


_validators: dict[int, tuple[Any, Any]] = {}


def validator_for(schema: Any) -> Any:
    """The compiled validator of a tool's schema, made once per schema object (building one per
    call cost the dispatch more than checking the input). Kept with the schema it was made
    from: a tool given another schema object (a subclass, a test) gets a validator of its own.
    A schema is never edited in place (the tools' schemas are constants)."""
    hit = _validators.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _validators[id(schema)] = (schema, StrictValidator(schema))
    return hit[1]


class Tier(models.TextChoices):
    """A write tool's blast radius. The one definition: the log's `tool_tier` column takes its
    choices from here, so a tool's tier is stored as it is declared."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Reach(StrEnum):
    """Who may make a write tool's call (least privilege), beside its tier (its blast radius).
    Whoever has the GM's powers (`Powers.gm`: the GM itself, the owner, a co-GM) may make any
    call; a player only a call of an `OWN_CHARACTER` tool, on creatures they control. The matrix
    is docs/tools.md#who-may-call-what."""

    GM = "gm"
    OWN_CHARACTER = "own_character"


@dataclass(frozen=True)
class Powers:
    """Whose rights a call runs with. The GM's own calls (the model at the GM's seat) have the
    GM's powers whoever's turn it answers; any other call has the powers of the person who makes
    it (`person_id`), which are the GM's if that person runs the table. Decided by the dispatch
    (`audit.services.dispatch`), once per call."""

    gm: bool
    person_id: Any = None


@dataclass(frozen=True)
class Ref:
    """An id in the example world (tests/conftest.py `World`): `Ref("goblin")` is the goblin's
    primary key, `Ref("chapters", 1)` the second chapter's. Examples name objects, not ids,
    because ids differ from database to database."""

    name: str
    index: int | None = None


def resolve_refs(value: Any, pk_of: Callable[[Ref], Any]) -> Any:
    """An example with every `Ref` replaced by `pk_of(ref)` (as a string where it is an object
    key, as JSON keys are)."""
    if isinstance(value, Ref):
        return pk_of(value)
    if isinstance(value, dict):
        return {
            (str(pk_of(k)) if isinstance(k, Ref) else k): resolve_refs(v, pk_of)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [resolve_refs(item, pk_of) for item in value]
    return value


# What a logged call wrote, before or after it: entity key -> its fields (None: no row).
EntityMap = dict[str, dict[str, Any] | None]

_CREATURE_REFS = re.compile(r"\bcreatures? (\d+(?:, \d+)*)")


@dataclass(frozen=True)
class Names:
    """Creatures' names by id, as the reader of a call's words may see them: the caller decides
    which (a player reads a creature the fog hides as someone unseen), the tools' words name
    creatures through it."""

    known: Mapping[int, str] = field(default_factory=dict)
    # Other things' names by entity key (`chapter:3` -> "Depths", `dungeon:1` -> "Flooded
    # Crypt"), for the words of calls that name them by id.
    labels: Mapping[str, str] = field(default_factory=dict)
    # Whether the reader sees creature `pk` standing on map cell (x, y); None: everywhere (the
    # GM). A player does not read where a foe stood inside the fog.
    sees: Callable[[Any, Any, Any], bool] | None = None

    def sees_at(self, pk: Any, x: Any, y: Any) -> bool:
        return self.sees is None or self.sees(pk, x, y)

    def __call__(self, pk: Any) -> str:
        """One creature's name; an id without one reads `creature 7`."""
        return self.known.get(pk, f"creature {pk}") if isinstance(pk, int) else str(pk)

    def of(self, kind: str, pk: Any, unknown: str) -> str:
        """A chapter's, a dungeon's, … name by its id; `unknown` (plain words, never the id)
        where the reader is not given it."""
        return self.labels.get(entities.key(kind, pk), unknown) if pk is not None else unknown

    def in_text(self, text: str) -> str:
        """A summary's ids named: `creature 7: HP -5` reads `Goblin: HP -5`. A list of ids
        with one unknown stays as it is."""

        def name_all(match: re.Match) -> str:
            ids = [int(part) for part in match[1].split(", ")]
            if not all(pk in self.known for pk in ids):
                return match[0]
            return ", ".join(self.known[pk] for pk in ids)

        return _CREATURE_REFS.sub(name_all, text)


class ToolError(Exception):
    """A refusal the model should read: bad ids, game rules."""


class ToolForbidden(ToolError):
    """A refusal by least privilege: the call's powers do not reach what it would touch. The
    dispatch logs it as a failed row, records a security event and answers 403; `target` names
    what was refused (`tool:<name>`, `creature:<id>`)."""

    def __init__(self, message: str, *, target: str) -> None:
        super().__init__(message)
        self.target = target


@dataclass
class ToolContext:
    campaign: Campaign
    actor: AbstractBaseUser
    turn: Turn | None = None
    # The GM's tool_use this call answers (blank for the REST API and the page).
    tool_use_id: str = ""
    # Whose rights the call runs with; without, the actor's as a player (the least).
    powers: Powers | None = None
    created: list[str] = field(default_factory=list)
    _creatures: dict[int, Creature] = field(default_factory=dict, repr=False)
    _resolved: dict[str, Any] = field(default_factory=dict, repr=False)
    _written: entities.Rows = field(default_factory=dict, repr=False)

    def loaded_rows(self) -> entities.Rows:
        """The rows this call has read through the context so far (the locked campaign, its
        creatures, what `once` resolved), by model and primary key: the default `snapshot`
        takes the pre-state from them instead of reading them again. Valid until `apply`
        writes: the dispatch asks before it."""
        rows: entities.Rows = {(Campaign, self.campaign.pk): self.campaign}
        rows.update(((Creature, c.pk), c) for c in self._creatures.values())
        for value in self._resolved.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, models.Model) and item.pk is not None:
                    rows.setdefault((type(item), item.pk), item)
        return rows

    def save(self, row: models.Model, fields: Any) -> None:
        """`row.save(update_fields=fields)` for a row this call writes: the dispatch records the
        post-state from the row as saved, without reading it again (the values a tool sets are
        those the database keeps: `tests/audit/test_invocation_dispatch.py` holds every example
        to what the database then holds). After this the call writes the row no other way."""
        entities.update_row(row, fields)
        self._written[(type(row), row.pk)] = row

    def written_rows(self) -> entities.Rows:
        """The rows `save` wrote: the post-state of their keys."""
        return self._written

    def record_created(self, kind: str, pk: Any) -> None:
        self.created.append(entities.key(kind, pk))

    def creature(self, creature_id: int) -> Creature:
        """A creature of this campaign; a hallucinated or foreign id is an error, never a write
        elsewhere. Read once per call: `write_set` resolves it and `apply` reuses the row (the
        context lives for one call, inside its transaction, so the row cannot go stale)."""
        if creature_id not in self._creatures:
            creature = entities.select_row(Creature, creature_id, campaign_id=self.campaign.pk)
            if creature is None:
                raise ToolError(f"No creature with id {creature_id} in this campaign.")
            self._creatures[creature_id] = creature
        return self._creatures[creature_id]

    def once(self, name: str, resolve: Callable[[], T]) -> T:
        """A call's other targets (its resource, item, encounter, …), looked up once like
        `creature`: `write_set` resolves them and `apply` reuses them."""
        if name not in self._resolved:
            self._resolved[name] = resolve()
        return self._resolved[name]

    def __post_init__(self) -> None:
        if self.powers is None:
            self.powers = Powers(gm=False, person_id=self.actor.pk)

    def may_act_on(self, creature: Creature) -> bool:
        """Whether this call's powers reach `creature` (the world's one rule, `may_act_on`)."""
        return may_act_on(
            kind=creature.kind,
            controlled_by_id=creature.controlled_by_id,
            user_id=self.powers.person_id,
            gm=self.powers.gm,
        )


class Tool:
    """What every tool declares for the model: a name, a description and a JSON-schema input."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    schema: ClassVar[dict[str, Any] | None] = None

    def validate(self, data: Any) -> str | None:
        """The first schema violation as a sentence for the model, or None. A valid input
        (nearly every call) costs one pass of the tool's compiled validator; only an invalid one
        collects its errors to pick the best."""
        validator = validator_for(self.schema)
        if validator.is_valid(data):
            return None
        error = best_match(validator.iter_errors(data))
        where = "input" + "".join(f"[{p!r}]" for p in error.absolute_path)
        return f"{where}: {error.message}"

    def spec(self) -> dict[str, Any]:
        """The tool as a model provider needs it."""
        return {"name": self.name, "description": self.description, "input_schema": self.schema}


class WriteTool(Tool):
    """A tool that changes the world: audited, tiered by blast radius, and undoable."""

    tier: ClassVar[Tier | None] = None
    # Who may call it (least privilege): the GM's powers unless the tool says players may too,
    # on their own character (`targets` then names the creatures a call acts on).
    reach: ClassVar[Reach] = Reach.GM
    # Whether a second call with the same input changes the world no further (it sets a value,
    # or fails): what MCP clients read as `idempotentHint` (docs/mcp.md#annotations).
    # tests/mcp/test_idempotent.py runs every example twice to hold the claim to the truth.
    idempotent: ClassVar[bool] = False
    # Valid inputs against the example world, one per way the tool is used. The system check
    # refuses a write tool without any, and the tests run every one (round trip, bad input,
    # write-set contract, the property test), so a new tool is tested by declaring them.
    examples: ClassVar[tuple[dict[str, Any], ...]] = ()
    # Tools whose first example sets the stage for this tool's (combat before its next turn).
    example_setup: ClassVar[tuple[str, ...]] = ()
    # The SQL statements the audited dispatch of its first example runs in the example world
    # beyond the log's fixed overhead: the tool's own reads and writes, the log's read-back of
    # each row it wrote other than through `ToolContext.save` (a row it created), and the one
    # read of what players may see of its events when they name a creature that may be hidden
    # (by a facet, or a non-PC whole) and the fog is in play (the example world has none: the
    # campaign lock tells the dispatch so). The statement-count test
    # (tests/audit/test_statement_count.py) holds every dispatch to the overhead plus this.
    example_statements: ClassVar[int | None] = None

    def authorize(self, ctx: ToolContext, data: dict[str, Any]) -> None:
        """Least privilege, the dispatch's first step for every call (before `write_set`,
        `snapshot` and `apply`, which may then assume it): ToolForbidden unless the call's
        powers reach it. The GM's powers reach every call; a player's only an `OWN_CHARACTER`
        tool's, and only when every creature it acts on is theirs. The same rule as a player's
        own hand (`campaigns.permissions.may_act_on`)."""
        if ctx.powers.gm:
            return
        if self.reach is not Reach.OWN_CHARACTER:
            raise ToolForbidden(
                f"Only the GM (the campaign owner or a co-GM) may use {self.name}; a player's "
                "calls act on their own character.",
                target=f"tool:{self.name}",
            )
        for creature in self.targets(ctx, data):
            if not ctx.may_act_on(creature):
                raise ToolForbidden(
                    f"{creature.name} is not your character: a player's {self.name} acts on "
                    "their own character only.",
                    target=entities.key("creature", creature.pk),
                )

    def targets(self, ctx: ToolContext, data: dict[str, Any]) -> list[Creature]:
        """The creatures a call acts on, which a player must control: by default the one its
        input names (`creature_id`). An `OWN_CHARACTER` tool whose input names none says which
        (the system check refuses one that does not); resolving them validates ids."""
        return [ctx.creature(data["creature_id"])]

    def write_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        """Keys of the existing entities `apply` will write (the tests hold `apply` to them plus
        what it reports creating); resolving them validates ids."""
        return []

    def read_set(self, ctx: ToolContext, data: dict[str, Any]) -> list[str]:
        """Keys of entities the call depends on without writing (reverting them conflicts)."""
        return []

    def snapshot(self, ctx: ToolContext, data: dict[str, Any], keys: list[str]) -> dict[str, Any]:
        """The pre-state of `keys`: from the rows the call has already read (no query), the
        others read from the database."""
        return {"entities": entities.capture_many(ctx.campaign, keys, rows=ctx.loaded_rows())}

    def apply(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        raise ToolError(f"{self.name} cannot be applied.")

    def revert(self, ctx: ToolContext, snapshot: dict[str, Any]) -> dict[str, Any]:
        restored = entities.restore_many(ctx.campaign, snapshot["entities"])
        return {"restored": restored}

    def summary(self, data: Any) -> str:
        """One line for people (plan dialog, admin, GM context). A logged row may hold input
        its tool cannot describe: a failed call's (that is why it failed), a row written before
        a rule tightened, an edited one. Then just the tool's name: a reader never breaks on a
        row, whatever it holds."""
        try:
            return self.name if self.validate(data) else self.summarize(data)
        except Exception:
            logger.warning("%s cannot summarise logged input", self.name, exc_info=True)
            return self.name

    def summarize(self, data: dict[str, Any]) -> str:
        """The tool's own one-line description of valid input; tools override it."""
        args = ", ".join(f"{k}={v}" for k, v in sorted(data.items()))
        return f"{self.name}({args})"

    def describe(
        self, data: dict[str, Any], *, before: EntityMap, after: EntityMap, name: Names
    ) -> list[str]:
        """The call in people's words, a line for each thing it did (the feed, the undo
        dialog): from its input, what it wrote as the log holds it before and after (`before`,
        `after`; empty for a call that failed or waits) and the creatures' names as the reader
        may see them (`name`). A logged row may hold any input: a describer that cannot read it
        returns no line or raises (KeyError, TypeError, ValueError, AttributeError), and the
        reader gets the summary (`web.pages.changes`). By default the summary, creatures
        named; tools override it."""
        return [name.in_text(self.summary(data))]


class ReadTool(Tool):
    """Read-only tools: the model may call them freely; they are not audited as writes."""

    def run(self, ctx: ToolContext, data: dict[str, Any]) -> dict[str, Any]:
        raise ToolError(f"{self.name} cannot run.")
