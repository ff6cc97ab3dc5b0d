"""What a person may see of the game world, decided here once, per viewer, and used by every
surface that shows the world: the board's map, rosters and combat tracker, `/state/`, the feed's
words for logged calls and the realtime events (docs/architecture.md, "The battle map").

Fog is in play once a cell has been revealed. While it is, players do not see NPCs and monsters
standing in unrevealed cells; player characters are always seen. The GM — the owner, a co-GM
(a member holding `revert_any_turn`), audit staff — sees through it.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

from campaigns.events import (
    ApprovalRequested,
    ApprovalResolved,
    InteractionReverted,
    InvocationReverted,
    StateChanged,
)
from campaigns.models import Campaign, Creature, FogCell
from campaigns.permissions import runs_table
from core.queries import plain_rows, plain_sql

Cell = tuple[int, int]

# How a player's surfaces name a creature the fog hides, where a list must hold a name (the
# combat order, "Combat starts: …"), and how they tell of a change to it.
UNSEEN = "Someone unseen"
HIDDEN_CHANGE = "Something happens in the fog"


class Sight(StrEnum):
    """How a viewer sees the world: the GM sees all of it, a player what the fog leaves."""

    GM = "gm"
    PLAYER = "player"

    @classmethod
    def of(cls, *, gm: bool) -> "Sight":
        """Whoever runs the table (`runs_table`: the owner, a co-GM, audit staff) sees as the
        GM; everyone else as a player."""
        return cls.GM if gm else cls.PLAYER


def sight_of(*, campaign: Campaign, user: Any) -> Sight:
    return Sight.of(gm=runs_table(campaign=campaign, user=user))


@dataclass(frozen=True)
class Fog:
    """The facts sight is decided from: whether fog is in play, the revealed cells among those
    that matter, and the creatures that matter, each with its kind and cell."""

    in_play: bool = False
    revealed: frozenset[Cell] = frozenset()
    creatures: Mapping[int, tuple[str, Cell]] = field(default_factory=dict)

    def hides(self, kind: Any, cell: Cell) -> bool:
        """The rule: a creature of `kind` standing on `cell` is hidden from players."""
        return self.in_play and kind != Creature.Kind.PC and cell not in self.revealed

    @cached_property
    def hidden(self) -> frozenset[int]:
        """The creatures (of those that matter) hidden from players."""
        return frozenset(pk for pk, (kind, c) in self.creatures.items() if self.hides(kind, c))


def fog_of_state(state: dict[str, Any]) -> Fog:
    """The facts as a state dump (`campaign_state`) holds them: no query."""
    return Fog(
        in_play=bool(state["fog"]),
        revealed=frozenset((f["x"], f["y"]) for f in state["fog"]),
        creatures={c["id"]: (c["kind"], (c["x"], c["y"])) for c in state["creatures"]},
    )


# The facts' one statement (`_facts`): the creatures that matter, the revealed cells among
# theirs and the cells asked about, and whether any cell is revealed.
_CREATURES = "SELECT {c:id}, {c:kind}, {c:x}, {c:y} FROM {c} WHERE {c:campaign} = %s"
_FACTS = (
    "SELECT 'creature', c.* FROM ({creatures}) c "
    "UNION ALL SELECT 'cell', 0, '', f.{f:x}, f.{f:y} FROM {f} f WHERE f.{f:campaign} = %s "
    "AND (EXISTS (SELECT 1 FROM ({creatures}) c WHERE c.{c:x} = f.{f:x} AND c.{c:y} = f.{f:y}) "
    "OR (f.{f:x}, f.{f:y}) IN (SELECT * FROM unnest(%s::int[], %s::int[]))) "
    "UNION ALL SELECT 'fog', 0, '', 0, 0 "
    "WHERE EXISTS (SELECT 1 FROM {f} f WHERE f.{f:campaign} = %s)"
)


def _facts(campaign_id: Any, creature_ids: list[int] | None, cells: list[Cell]) -> list[tuple]:
    """The facts' one query: the creatures (those of `creature_ids`, or all), the revealed
    cells among theirs and `cells`, and whether any cell is revealed."""
    # Raw SQL: read by every player's page after an event (the push of its fragments, the fog
    # over a turn's calls), and every request of the log's API; as the ORM's UNION of three
    # querysets its building and compiling cost several times the statement
    creatures = _CREATURES + (" AND {c:id} = ANY(%s)" if creature_ids is not None else "")
    sql = plain_sql(_FACTS.replace("{creatures}", creatures), c=Creature, f=FogCell)
    chosen = [campaign_id, *([creature_ids] if creature_ids is not None else [])]
    xs, ys = [x for x, _ in cells], [y for _, y in cells]
    return plain_rows(sql, [*chosen, campaign_id, *chosen, xs, ys, campaign_id])


def fog_read(
    *, campaign_id: Any, creature_ids: Iterable[int] | None = None, cells: Iterable[Cell] = ()
) -> Fog:
    """The facts read from the database in one query: the creatures named (all of the
    campaign's with None) and the fog over their cells and over `cells`."""
    ids = None if creature_ids is None else sorted(creature_ids)
    facts: dict[str, list] = {"creature": [], "cell": [], "fog": []}
    for what, pk, kind, x, y in _facts(campaign_id, ids, sorted(set(cells))):
        facts[what].append((pk, kind, (x, y)))
    return Fog(
        in_play=bool(facts["fog"]),
        revealed=frozenset(cell for _, _, cell in facts["cell"]),
        creatures={pk: (kind, cell) for pk, kind, cell in facts["creature"]},
    )


# ---- a state dump as a player sees it ---------------------------------------------------------


def state_seen(state: dict[str, Any], sight: Sight) -> dict[str, Any]:
    """The dump as `sight` sees it: the GM's is the canonical dump itself; a player's leaves
    out the creatures the fog hides, their resources, items and resource events, and their ids
    in the combat order (the slot stays, so the turn order still counts right)."""
    hidden = fog_of_state(state).hidden if sight is Sight.PLAYER else set()
    if not hidden:
        return state
    dropped = {r["id"] for r in state["resources"] if r["creature_id"] in hidden}
    return {
        **state,
        "creatures": [c for c in state["creatures"] if c["id"] not in hidden],
        "resources": [r for r in state["resources"] if r["id"] not in dropped],
        "resource_events": [e for e in state["resource_events"] if e["resource_id"] not in dropped],
        "items": [i for i in state["items"] if i["creature_id"] not in hidden],
        "encounters": [
            {**e, "order": [_slot_seen(slot, hidden) for slot in e["order"]]}
            for e in state["encounters"]
        ],
    }


def _slot_seen(slot: Any, hidden: frozenset[int]) -> Any:
    if isinstance(slot, dict) and slot.get("creature_id") in hidden:
        return {**slot, "creature_id": None}
    return slot


# ---- a logged or held tool call -----------------------------------------------------------


def placed_cell(data: Any) -> Cell | None:
    """The cell a call puts a creature on (`move_token`, `spawn_creature`: an `x` and a `y` in
    its input), or None."""
    if not isinstance(data, dict):
        return None
    x, y = data.get("x"), data.get("y")
    return (x, y) if type(x) is int and type(y) is int else None


def call_hidden(data: Any, fog: Fog, *, created: Iterable[int] = ()) -> bool:
    """Whether a call (its input `data`; `created`: the creatures it made) tells of a creature
    hidden from players: it acts on one (`creature_id`), made one, or puts one (of the kind
    it names, or the kind of the creature it moves) where players would not see it."""
    if not isinstance(data, dict):
        return False
    subject = data.get("creature_id") if type(data.get("creature_id")) is int else None
    cell = placed_cell(data)
    kind = data.get("kind") or fog.creatures.get(subject, (None,))[0]
    return (
        subject in fog.hidden
        or any(pk in fog.hidden for pk in created)
        or (cell is not None and kind is not None and fog.hides(kind, cell))
    )


def held_call_names(call: Any, preview: Any) -> tuple[set[int], set[Cell]]:
    """The creatures a call held for approval names (in its input and its preview's rows) and
    the cell it would put a creature on: what its fog facts are read for."""
    call = call if isinstance(call, dict) else {}
    ids = {*call.get("creature_ids", []), call.get("creature_id")}
    for row in preview if isinstance(preview, list) else []:
        if isinstance(row, dict) and row.get("entity") == "creature" and str(row["id"]).isdigit():
            ids.add(int(row["id"]))
    cell = placed_cell(call)
    return {pk for pk in ids if type(pk) is int}, {cell} if cell else set()


def held_call_hidden(call: Any, preview: Any, fog: Fog) -> bool:
    """Whether a held call tells players of a creature the fog hides: it names one, or would
    put one where they would not see it."""
    return bool(held_call_names(call, preview)[0] & fog.hidden) or call_hidden(call, fog)


# ---- realtime events as players see them ------------------------------------------------------

REVERTED = (InvocationReverted.type, InteractionReverted.type)


def _creature_id(entry: Any) -> int | None:
    """The creature a state entry (`{entity, id, fields}`) describes, unless it is gone."""
    if not isinstance(entry, dict) or entry.get("entity") != "creature" or not entry.get("fields"):
        return None
    return int(entry["id"])


def _named(envelope: dict[str, Any]) -> tuple[set[int], set[Cell]]:
    """The creatures an event names that may be hidden (a PC it describes whole is not), and
    the cells a held call would put a creature on."""
    data, kind = envelope["data"], envelope["type"]
    if kind == StateChanged.type:
        fields = data.get("fields") or {}
        pc = fields.get("kind") == Creature.Kind.PC
        return ({pk} if (pk := _creature_id(data)) is not None and not pc else set()), set()
    if kind in REVERTED:
        return {pk for s in data.get("state", []) if (pk := _creature_id(s)) is not None}, set()
    if kind == ApprovalRequested.type:
        return held_call_names(data.get("input"), data.get("preview"))
    if kind == ApprovalResolved.type:
        result = data.get("result")
        subject = result.get("creature_id") if isinstance(result, dict) else None
        return ({subject} if type(subject) is int else set()), set()
    return set(), set()


def player_envelopes(
    campaign_id: Any, envelopes: list[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """The events as players may see them, in the same order with the same `seq`s, or None
    when they see them as they are. Read in the writer's transaction, once per broadcast (not
    per socket): one query, and only when an event names a creature that may be hidden."""
    ids: set[int] = set()
    cells: set[Cell] = set()
    for envelope in envelopes:
        named, placed = _named(envelope)
        ids, cells = ids | named, cells | placed
    if not ids and not cells:
        return None
    fog = fog_read(campaign_id=campaign_id, creature_ids=ids, cells=cells)
    seen = [_envelope_seen(e, fog) for e in envelopes] if fog.in_play else envelopes
    return None if all(a is b for a, b in zip(seen, envelopes, strict=True)) else seen


def _envelope_seen(envelope: dict[str, Any], fog: Fog) -> dict[str, Any]:
    """One event as players see it: a change to a hidden creature is a placeholder (its data
    empty: the page still refetches the board, and sees no gap in `seq`); a restored state
    leaves hidden creatures out; a held call or its answer that tells of one keeps only who,
    what tool and why."""
    data, kind, hidden = envelope["data"], envelope["type"], fog.hidden
    if kind == StateChanged.type and _creature_id(data) in hidden:
        return {**envelope, "data": {}}
    if kind in REVERTED:
        restored = data.get("state", [])
        state = [s for s in restored if _creature_id(s) not in hidden]
        return envelope if len(state) == len(restored) else _with(envelope, state=state)
    if kind == ApprovalRequested.type and held_call_hidden(
        data.get("input"), data.get("preview"), fog
    ):
        return _with(envelope, input={}, summary="", preview=[])
    if kind == ApprovalResolved.type and _named(envelope)[0] & hidden:
        return _with(envelope, result=None)
    return envelope


def _with(envelope: dict[str, Any], **data: Any) -> dict[str, Any]:
    return {**envelope, "data": {**envelope["data"], **data}}
