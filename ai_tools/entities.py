"""Entity keys: how tools name what they write, and how pre-state is captured and restored.

A key is `kind:id` for a whole row (`creature:7`) or `kind:id/facet` for a group of its fields
(`creature:7/vitals`, `campaign:<uuid>/scene`). Two keys overlap when they are equal or one is
the other's prefix at a `/`: a whole row overlaps each of its facets, facets do not overlap each
other. That is what conflict detection compares, so damaging a creature and moving it are
independent, while spawning it and later damaging it are not.
"""

import functools
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import DEFAULT_DB_ALIAS, connections, models

from campaigns.models import (
    Achievement,
    Campaign,
    Creature,
    Encounter,
    Episode,
    FogCell,
    GMMemory,
    InventoryItem,
    Resource,
    ResourceEvent,
)


@dataclass(frozen=True)
class EntityKind:
    model: type[models.Model]
    fields: tuple[str, ...] | None = None  # None: the whole row (and its existence)

    def field_names(self) -> list[str]:
        if self.fields is not None:
            return list(self.fields)
        return [f.attname for f in self.model._meta.concrete_fields]


CREATURE_VITALS = Creature.VITALS

KINDS: dict[str, EntityKind] = {
    "creature": EntityKind(Creature),
    "creature/vitals": EntityKind(Creature, CREATURE_VITALS),
    "creature/position": EntityKind(Creature, ("x", "y")),
    "resource": EntityKind(Resource),
    "resource_event": EntityKind(ResourceEvent),
    "item": EntityKind(InventoryItem),
    "encounter": EntityKind(Encounter),
    "fog": EntityKind(FogCell),
    "memory": EntityKind(GMMemory),
    "achievement": EntityKind(Achievement),
    "episode": EntityKind(Episode),
    "campaign/scene": EntityKind(Campaign, ("scene", "location")),
    "campaign/chapter": EntityKind(Campaign, ("current_chapter_id",)),
    "campaign/dungeon": EntityKind(Campaign, ("active_dungeon_id",)),
    "campaign/combat": EntityKind(Campaign, ("active_encounter_id",)),
    "campaign/status": EntityKind(Campaign, ("status", "completed_at")),
}


def key(kind: str, pk: Any, facet: str = "") -> str:
    return f"{kind}:{pk}/{facet}" if facet else f"{kind}:{pk}"


def parse(entity_key: str) -> tuple[str, str, str]:
    """`creature:7/vitals` -> ("creature", "7", "vitals")."""
    head, _, facet = entity_key.partition("/")
    kind, _, pk = head.partition(":")
    return kind, pk, facet


def root(entity_key: str) -> str:
    return entity_key.partition("/")[0]


def overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def kind_of(entity_key: str) -> EntityKind:
    kind, _, facet = parse(entity_key)
    return KINDS[f"{kind}/{facet}" if facet else kind]


def readable(entity_key: Any) -> bool:
    """Whether a logged key names an entity this code can look up: a kind it knows and an id
    of the right type. Rows may hold anything (older code, an edit), and readers skip the rest."""
    if not isinstance(entity_key, str):
        return False
    try:
        kind_of(entity_key).model._meta.pk.to_python(parse(entity_key)[1])
    except (KeyError, ValidationError):
        return False
    return True


def logged_keys(value: Any) -> list[str]:
    """The readable keys of a logged write set."""
    return [k for k in value if readable(k)] if isinstance(value, list) else []


def logged_map(value: Any) -> dict[str, dict[str, Any] | None]:
    """An entity map as a logged row holds it (a snapshot's `entities`, a post-state), keeping
    the well-formed entries: a readable key and a row of fields (or None, no row)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if readable(k) and (v is None or isinstance(v, dict))}


def snapshot_map(snapshot: Any) -> dict[str, dict[str, Any] | None]:
    """The entity map of a logged revert snapshot (tools that keep other pre-state have none)."""
    return logged_map(snapshot.get("entities")) if isinstance(snapshot, dict) else {}


def entries(logged: dict[str, Any], kind: str, facet: str = "") -> list[tuple[str, Any]]:
    """(id, fields) of each entry of an entity map of `kind` (a whole row, or the `facet`),
    in the map's order: what the tools' words read of a call's before and after."""
    found = []
    for entity_key, fields in logged.items():
        k, pk, f = parse(entity_key)
        if k == kind and f == facet:
            found.append((pk, fields))
    return found


def fields_of(logged: dict[str, Any], kind: str, facet: str = "") -> dict[str, Any]:
    """The fields of the first entry of `kind` (and `facet`) that has a row; {} without."""
    return next((f for _, f in entries(logged, kind, facet) if isinstance(f, dict)), {})


def _queryset(campaign: Campaign, entity_key: str) -> models.QuerySet:
    kind = kind_of(entity_key)
    _, pk, _ = parse(entity_key)
    if kind.model is Campaign:
        return Campaign.objects.filter(pk=campaign.pk, pk__exact=pk)
    return kind.model._default_manager.filter(campaign_id=campaign.pk, pk=pk)


def _to_json(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool, list, dict)) or value is None:
        return value
    return str(value)


def capture(campaign: Campaign, entity_key: str) -> dict[str, Any] | None:
    """The entity's fields as JSON, or None when it does not exist."""
    names = kind_of(entity_key).field_names()
    row = _queryset(campaign, entity_key).values(*names).first()
    if row is None:
        return None
    return {name: _to_json(row[name]) for name in names}


def capture_many(
    campaign: Campaign, keys: list[str], *, rows: "Rows | None" = None
) -> dict[str, dict[str, Any] | None]:
    """Each key's fields as JSON (None: no row). A key whose row is in `rows` (loaded in this
    transaction and not written since) is read from it, without a query."""
    return {k: loaded(k, rows) if in_rows(k, rows) else capture(campaign, k) for k in keys}


# Rows already loaded in the current transaction, by (model, primary key).
Rows = dict[tuple[type[models.Model], Any], models.Model]


def _row_id(entity_key: str) -> tuple[type[models.Model], Any] | None:
    try:
        model = kind_of(entity_key).model
        return model, model._meta.pk.to_python(parse(entity_key)[1])
    except (KeyError, ValidationError):
        return None


def in_rows(entity_key: str, rows: Rows | None) -> bool:
    """Whether `capture_many` serves this key from `rows`, without a query."""
    return bool(rows) and _row_id(entity_key) in rows


def loaded(entity_key: str, rows: Rows) -> dict[str, Any]:
    """What `capture` returns for the key, from its row in `rows` instead of the database: the
    same fields, the same values (a row loaded from the database holds what `values()` reads)."""
    row = rows[_row_id(entity_key)]
    return {name: _to_json(getattr(row, name)) for name in kind_of(entity_key).field_names()}


M = TypeVar("M", bound=models.Model)


# The audited dispatch's hot path (the campaign lock, a tool's read and write of its target) in
# plain SQL through `connection.cursor()`: at a few milliseconds a call, building and compiling
# each statement's queryset cost the ORM more CPU than the rest of the call
# (docs/performance.md#dispatch_overheadpy-what-the-write-ahead-log-costs). What is read comes
# back as the ORM would hand it: `Model.from_db` over each field's `from_db_value`.


def select_row(
    model: type[M], pk: Any, *, campaign_id: Any = None, lock: bool = False, flags: str = ""
) -> M | None:
    """The row of `model` with this primary key (and of this campaign, if given), as
    `Model.objects.filter(...).first()` reads it, or None; `lock`: FOR UPDATE. `flags`: SQL
    boolean columns `<expression> AS <name>` read in the same statement, set on the row."""
    db = connections[DEFAULT_DB_ALIAS]
    reading = _reading(model)
    sql = f"SELECT {reading.columns}{flags} FROM {reading.table} WHERE {reading.pk} = %s"
    params = [model._meta.pk.get_db_prep_value(pk, db)]
    if campaign_id is not None:
        sql += f" AND {reading.campaign} = %s"
        params.append(campaign_id)
    with db.cursor() as cursor:
        cursor.execute(sql + (" FOR UPDATE" if lock else ""), params)
        values = cursor.fetchone()
        names = [column.name for column in cursor.description[len(reading.fields) :]]
    if values is None:
        return None
    count = len(reading.fields)
    found = model.from_db(db.alias, reading.attnames, reading.convert(values[:count], db))
    for name, value in zip(names, values[count:], strict=True):
        setattr(found, name, value)
    return found


def update_row(row: models.Model, fields: Any) -> None:
    """`row.save(update_fields=fields)`, in one statement of plain SQL."""
    db = connections[DEFAULT_DB_ALIAS]
    reading = _reading(type(row))
    targets = [row._meta.get_field(name) for name in fields]
    sets = ", ".join(f"{db.ops.quote_name(f.column)} = %s" for f in targets)
    params = [f.get_db_prep_save(getattr(row, f.attname), db) for f in targets]
    with db.cursor() as cursor:
        cursor.execute(
            f"UPDATE {reading.table} SET {sets} WHERE {reading.pk} = %s",
            [*params, row._meta.pk.get_db_prep_value(row.pk, db)],
        )
        if cursor.rowcount != 1:
            raise LookupError(f"{row._meta.label} {row.pk} is gone")


@dataclass(frozen=True)
class _Reading:
    """How to read every concrete field of a model in plain SQL."""

    table: str
    pk: str
    campaign: str
    columns: str
    fields: tuple[Any, ...]

    @property
    def attnames(self) -> list[str]:
        return [f.attname for f in self.fields]

    def convert(self, values: Any, db: Any) -> list[Any]:
        return [
            f.from_db_value(v, None, db) if hasattr(f, "from_db_value") else v
            for f, v in zip(self.fields, values, strict=True)
        ]


@functools.cache
def _reading(model: type[models.Model]) -> _Reading:
    meta, quote = model._meta, connections[DEFAULT_DB_ALIAS].ops.quote_name
    fields = tuple(meta.concrete_fields)
    return _Reading(
        table=quote(meta.db_table),
        pk=quote(meta.pk.column),
        campaign=quote("campaign_id"),
        columns=", ".join(quote(f.column) for f in fields),
        fields=fields,
    )


def _from_json(model: type[models.Model], values: dict[str, Any]) -> dict[str, Any]:
    by_attname = {f.attname: f for f in model._meta.concrete_fields}
    return {name: by_attname[name].to_python(value) for name, value in values.items()}


def restore(campaign: Campaign, entity_key: str, before: dict[str, Any] | None) -> None:
    """Put the entity back as `before` describes it: delete it if it did not exist."""
    kind = kind_of(entity_key)
    queryset = _queryset(campaign, entity_key)
    if before is None:
        queryset.delete()
        return
    values = _from_json(kind.model, before)
    if queryset.update(**values) == 0:
        if kind.fields is not None:
            raise LookupError(f"cannot restore {entity_key}: the row no longer exists")
        kind.model._default_manager.create(**values)


def restore_many(campaign: Campaign, before: dict[str, dict[str, Any] | None]) -> list[str]:
    """Restore rows that existed first (parents before children), then delete what was created,
    newest first, so foreign keys are satisfied at every step."""
    existed = [k for k, v in before.items() if v is not None]
    created = [k for k, v in before.items() if v is None]
    for entity_key in existed:
        restore(campaign, entity_key, before[entity_key])
    for entity_key in reversed(created):
        restore(campaign, entity_key, None)
    return existed + list(reversed(created))


def describe(entity_key: str, fields: dict[str, Any] | None) -> dict[str, Any]:
    """A `state_changed` payload: which entity, and its fields now (None: it no longer exists)."""
    kind, pk, facet = parse(entity_key)
    return {"entity": kind, "id": pk, "facet": facet, "fields": fields, "deleted": fields is None}
