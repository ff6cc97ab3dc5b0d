"""Who may post a tool call into a turn: the turn's actor (their agent plays for them) or the
campaign owner (who runs the table). Reverting is decided by `audit.permissions.may_revert`."""

from typing import Any

from audit.models import SecurityEvent
from campaigns.models import Campaign, Turn
from core.errors import Forbidden


def authorize_tool_call(*, user: Any, campaign: Campaign, turn: Turn) -> None:
    """Cheap facts only (two ids already loaded): no query. A refusal is a Forbidden that
    `recording_denials` turns into a `tool_call_denied` security event."""
    if user.pk not in (turn.actor_id, campaign.owner_id):
        raise Forbidden(
            "Only the turn's actor or the campaign owner may post tool calls into it.",
            kind=SecurityEvent.Kind.TOOL_CALL_DENIED,
            campaign=campaign,
            target=f"turn:{turn.pk}",
        )
