"""Reads of the invocation log for the API. Filters match the log's (campaign, column,
-sequence) indexes, so every filtered page is one index range scan."""

from typing import Any

from django.db.models import QuerySet

from audit.models import ToolInvocation
from campaigns.models import Campaign, Turn
from core.errors import NotFound

# Columns only revert needs; the API never shows them, so a page of the log does not load them.
_INTERNAL = ("revert_snapshot", "post_state", "write_set", "read_set", "broadcast_events")


def invocation_list(
    *,
    campaign: Campaign,
    status: str | None = None,
    tier: str | None = None,
    tool: str | None = None,
    turn: int | None = None,
) -> QuerySet[ToolInvocation]:
    filters: dict[str, Any] = {
        "status": status,
        "tool_tier": tier,
        "tool_name": tool,
        "turn_id": turn,
    }
    return (
        ToolInvocation.objects.filter(
            campaign=campaign, **{k: v for k, v in filters.items() if v is not None}
        )
        .select_related("user", "requested_by", "reverted_by")
        .defer(*_INTERNAL)
    )


def invocation_get(*, campaign: Campaign, invocation_id: Any) -> ToolInvocation:
    """An invocation of this campaign; one of another campaign is NotFound, like a made-up id."""
    row = invocation_list(campaign=campaign).filter(pk=invocation_id).first()
    if row is None:
        raise NotFound()
    return row


def turn_get(*, campaign: Campaign, turn_id: Any) -> Turn:
    turn = Turn.objects.filter(campaign=campaign, pk=turn_id).first()
    if turn is None:
        raise NotFound()
    return turn
