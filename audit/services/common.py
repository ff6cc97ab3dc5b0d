"""Pieces shared by dispatch and revert."""

from typing import Any

from audit.models import ToolInvocation
from campaigns.models import Campaign


def campaign_lock(campaign_id: Any) -> Campaign:
    """Lock the campaign row: tool calls and reverts of one campaign run one at a time, across
    processes. Every writer takes this lock first, so lock order is always campaign → rows."""
    return Campaign.objects.select_for_update().get(pk=campaign_id)


def next_sequence(campaign_id: Any) -> int:
    """The campaign's next log sequence number. Assumes the campaign lock is held."""
    last = (
        ToolInvocation.objects.filter(campaign_id=campaign_id)
        .order_by("-sequence")
        .values_list("sequence", flat=True)
        .first()
    )
    return (last or 0) + 1
