"""Pieces shared by dispatch and revert."""

from typing import Any

from audit.models import ToolInvocation
from campaigns.models import Campaign


def campaign_lock(campaign_id: Any) -> Campaign:
    """Lock the campaign row: tool calls and reverts of one campaign run one at a time, across
    processes. Every writer takes this lock first, so lock order is always campaign → rows."""
    return Campaign.objects.select_for_update().get(pk=campaign_id)


def chain_position(campaign_id: Any) -> tuple[int, str]:
    """The next log sequence number and the hash it links to. Assumes the campaign lock."""
    last = (
        ToolInvocation.objects.filter(campaign_id=campaign_id)
        .order_by("-sequence")
        .values_list("sequence", "row_hash")
        .first()
    )
    return (last[0] + 1, last[1]) if last else (1, "")
