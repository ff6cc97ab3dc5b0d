"""What a held tool call would change, found by doing it and taking it back.

The preview runs the tool for real — its own checks, its write set, its apply — inside a
savepoint that is always rolled back, under the campaign lock the caller holds, so what people
approve is what the tool does, not a second description of it that could drift. The database is
left exactly as it was (`tests/audit/test_approval_preview.py` shows `campaign_state` unchanged
for every tool's examples).
"""

import copy
import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from ai_tools import entities
from ai_tools.base import ToolContext, WriteTool
from audit.services.common import guarded


def call_preview(tool: WriteTool, ctx: ToolContext, data: Any, *, reason: str) -> dict[str, Any]:
    """{reason, diff: [{entity, id, field, before, after}], before: {key: fields}} for the call;
    `before` is what the entities it writes hold now, which approval compares against to tell a
    stale preview. Assumes the campaign lock and a transaction. A refusal of the tool raises
    ToolFailed (after the rollback), as the call itself would."""
    # A context of its own, on a copy of the campaign row: apply changes the instances it
    # reads, and the caller's (the locked campaign) must keep what the database holds.
    ctx = ToolContext(
        campaign=copy.copy(ctx.campaign),
        actor=ctx.actor,
        turn=ctx.turn,
        tool_use_id=ctx.tool_use_id,
        powers=ctx.powers,
    )
    savepoint = transaction.savepoint()
    try:
        guarded(tool, tool.authorize, ctx, data)
        keys = guarded(tool, tool.write_set, ctx, data)
        before = entities.capture_many(ctx.campaign, keys, rows=ctx.loaded_rows())
        guarded(tool, tool.apply, ctx, data)
        written = keys + [k for k in ctx.created if k not in keys]
        after = entities.capture_many(ctx.campaign, written, rows=ctx.written_rows())
    finally:
        transaction.savepoint_rollback(savepoint)
    return _as_json({"reason": reason, "diff": _diff(written, before, after), "before": before})


def preview_is_stale(stored: Any, fresh: dict[str, Any]) -> bool:
    """Whether the entities the call writes changed since `stored` was shown."""
    return not isinstance(stored, dict) or stored.get("before") != fresh["before"]


def _diff(keys: list[str], before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for k in keys:
        was, will = before.get(k) or {}, after.get(k) or {}
        kind, pk, _ = entities.parse(k)
        for name in dict.fromkeys([*was, *will]):
            if was.get(name) != will.get(name) or (k in before) != (k in after):
                rows.append(
                    {
                        "entity": kind,
                        "id": pk,
                        "field": name,
                        "before": was.get(name),
                        "after": will.get(name),
                    }
                )
    return rows


def _as_json(value: dict[str, Any]) -> dict[str, Any]:
    """As the JSON column will hand it back, so a stored preview and a fresh one compare."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))
