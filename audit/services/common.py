"""Pieces shared by dispatch and revert."""

from typing import Any

from audit.chain import chain_tip
from campaigns.models import Campaign


def campaign_lock(campaign_id: Any) -> Campaign:
    """Lock the campaign row: tool calls and reverts of one campaign run one at a time, across
    processes. Every writer takes this lock first, so lock order is always campaign → rows."""
    return Campaign.objects.select_for_update().get(pk=campaign_id)


def chain_position(campaign_id: Any) -> tuple[int, str]:
    """The next log sequence number and the hash it links to (the chain's last link: a row or
    a transition after it). Assumes the campaign lock."""
    tip = chain_tip(campaign_id)
    return tip.sequence + 1, tip.hash
