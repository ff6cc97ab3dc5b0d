"""How the log reads to people: indented JSON, tier badges and the before → after diff."""

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timezone import localtime

from ai_tools import entities as entity_keys
from ai_tools.base import Tier
from audit.models import ToolInvocation
from campaigns.selectors import creature_names_in
from web.pages.changes import named_summary

TIER_COLOURS = {
    Tier.CRITICAL: "#ba2121",
    Tier.HIGH: "#d35400",
    Tier.MEDIUM: "#9a7d0a",
    Tier.LOW: "#417690",
}


def pretty_json(value: Any) -> SafeString:
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return format_html('<pre class="audit-json">{}</pre>', text)


def compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def tier_badge(tier: str) -> SafeString:
    if not tier:
        return format_html("{}", "—")
    return format_html(
        '<span class="audit-tier" style="background:{}">{}</span>',
        TIER_COLOURS.get(tier, "#666"),
        tier,
    )


def summary(row: ToolInvocation, names: dict[int, str] | None = None) -> str:
    """The tool's one-line description of the call with creatures named ("Goblin: HP -5"), as
    the campaign page says it; a tool since removed is named only. `names` (creature id → name)
    spares a query per row where a page lists many."""
    if names is None:
        names = creature_names_in(campaign_ids=[row.campaign_id])
    return named_summary(row.tool_name, row.input, names)


def short_time(value: datetime | None) -> str:
    """`2025-11-30 14:05:09` in the current time zone: a column that fits a 1280 px screen
    (Django's default, `Nov. 30, 2025, 2:05 p.m.`, takes twice the width)."""
    return localtime(value).strftime("%Y-%m-%d %H:%M:%S") if value else "—"


def time_column(field: str, description: str) -> Callable:
    """A changelist column showing a datetime field as `short_time`, sorted by the field."""

    @admin.display(description=description, ordering=field)
    def column(model_admin: Any, obj: Any) -> str:
        return short_time(getattr(obj, field))

    return column


def label(row: ToolInvocation) -> str:
    return f"#{row.sequence} {row.tool_name}"


def change_url(invocation_id: Any) -> str:
    return reverse("admin:audit_toolinvocation_change", args=[invocation_id])


def invocation_link(row: ToolInvocation) -> SafeString:
    return format_html('<a href="{}">{}</a>', change_url(row.pk), label(row))


def entity_diff(row: ToolInvocation) -> list[dict[str, Any]] | None:
    """Before → after for every entity the call wrote: the snapshot holds the before, the post
    state the after. A created entity has no before, a deleted one no after. None when the call
    wrote but no snapshot was captured, so the before is unknown."""
    after_all = entity_keys.logged_map(row.post_state)
    if not isinstance(row.revert_snapshot, dict):
        return [] if not after_all else None
    before_all = entity_keys.snapshot_map(row.revert_snapshot)
    entities = []
    for key in dict.fromkeys([*entity_keys.logged_keys(row.write_set), *after_all, *before_all]):
        before, after = before_all.get(key), after_all.get(key)
        names = dict.fromkeys([*(before or {}), *(after or {})])
        entities.append(
            {
                "key": key,
                "change": _change_kind(before, after),
                "fields": [
                    {
                        "name": name,
                        "before": compact_json((before or {}).get(name)) if before else "",
                        "after": compact_json((after or {}).get(name)) if after else "",
                    }
                    for name in names
                    if before is None or after is None or before.get(name) != after.get(name)
                ],
            }
        )
    return entities


def _change_kind(before: dict | None, after: dict | None) -> str:
    if before is None:
        return "created"
    if after is None:
        return "deleted"
    return "changed" if before != after else "unchanged"


class InvocationColumns:
    """Columns of a log row that the log's admin and a turn's inline both show."""

    @admin.display(description="invocation")
    def invocation(self, row: ToolInvocation) -> SafeString:
        return invocation_link(row)

    @admin.display(description="tier", ordering="tool_tier")
    def tier(self, row: ToolInvocation) -> SafeString:
        return tier_badge(row.tool_tier)

    @admin.display(description="what it did")
    def summary(self, row: ToolInvocation) -> str:
        return summary(row, self.creature_names(row))

    def creature_names(self, row: ToolInvocation) -> dict[int, str]:
        return creature_names_in(campaign_ids=[row.campaign_id])


def json_column(description: str, value: Callable[[ToolInvocation], Any]) -> Callable:
    """A read-only admin field showing `value(row)` as indented JSON."""

    @admin.display(description=description)
    def column(model_admin: Any, row: ToolInvocation) -> SafeString:
        return pretty_json(value(row))

    return column


def render_entity_diff(row: ToolInvocation) -> SafeString:
    return render_to_string(
        "admin/audit/toolinvocation/entity_diff.html", {"entities": entity_diff(row)}
    )
