"""The write-set contract, checked rather than trusted: everything a tool's `apply` changes in
the campaign's world is named by the call's logged write set (the keys `write_set` declared
plus the ones `apply` reported creating). Undo restores only those keys, so a drifting write set
would make a revert silently incomplete; here it fails loudly instead."""

from typing import Any

from django.apps import apps
from django.db import models

from ai_tools import entities, registry
from audit.models import ToolInvocation
from campaigns.models import Campaign

Field = tuple[str, str, str]  # (model label, primary key, field attname)
_ABSENT = object()


def _world_models() -> list[type[models.Model]]:
    """The campaign row and every model of the campaigns app that belongs to a campaign."""
    owned = [
        model
        for model in apps.get_app_config("campaigns").get_models()
        if any(f.name == "campaign" for f in model._meta.concrete_fields)
    ]
    return [Campaign, *owned]


def world_rows(campaign: Campaign) -> dict[tuple[str, str], dict[str, Any]]:
    """Every row of the campaign's world by (model label, primary key)."""
    rows = {}
    for model in _world_models():
        field = "pk" if model is Campaign else "campaign_id"
        for row in model._default_manager.filter(**{field: campaign.pk}).values():
            rows[(model._meta.label, str(row[model._meta.pk.attname]))] = row
    return rows


def changed_fields(before: dict, after: dict) -> set[Field]:
    """Fields that differ; a row created or deleted changes all of its fields."""
    changed = set()
    for row_id in before.keys() | after.keys():
        old, new = before.get(row_id, {}), after.get(row_id, {})
        names = old.keys() | new.keys()
        changed |= {
            (*row_id, name) for name in names if old.get(name, _ABSENT) != new.get(name, _ABSENT)
        }
    return changed


def covered_fields(write_set: list[str]) -> set[Field]:
    """What a write set names, field by field (a whole-row key names every field of the row)."""
    covered = set()
    for key in write_set:
        kind = entities.kind_of(key)
        pk = entities.parse(key)[1]
        covered |= {(kind.model._meta.label, pk, name) for name in kind.field_names()}
    return covered


def record_apply_changes(monkeypatch: Any) -> list[set[Field]]:
    """From now until the test ends, every write tool's `apply` appends what it changed in the
    world to the returned list. Calling it again starts a new list (each wrapper wraps the class's
    own `apply`, never the previous wrapper), so a Hypothesis test may call it per example."""
    changes: list[set[Field]] = []
    for tool in registry.write_tools():
        monkeypatch.setattr(tool, "apply", _recording(type(tool).apply.__get__(tool), changes))
    return changes


def _recording(apply: Any, changes: list[set[Field]]) -> Any:
    def recorded(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
        before = world_rows(ctx.campaign)
        result = apply(ctx, data)
        changes.append(changed_fields(before, world_rows(ctx.campaign)))
        return result

    return recorded


def assert_write_set_kept(row: ToolInvocation, changes: list[set[Field]]) -> None:
    """A committed call's `apply` (the last one recorded) changed nothing outside its logged
    write set. A failed call is rolled back whole, so its changes never count."""
    if row.status != ToolInvocation.Status.COMMITTED:
        return
    undeclared = changes[-1] - covered_fields(row.write_set)
    assert not undeclared, (
        f"{row.tool_name} wrote {sorted(undeclared)} outside its write set {row.write_set}"
    )
