"""Values the world refuses from people, whichever surface (API, admin) they come through."""

from django.core.exceptions import ValidationError

from campaigns.models import Campaign

APPROVAL_UNAVAILABLE = (
    'Human approval is not available yet, so approval_policy must be "none": another policy '
    "would be stored but hold no tool call back."
)


def approval_policy_available(policy: str) -> None:
    """Refuse a policy that would pretend: until human approval lands (issue 11) nothing pauses
    for a human, so only `none` says truthfully what happens to a campaign's tool calls."""
    if policy != Campaign.ApprovalPolicy.NONE:
        raise ValidationError(APPROVAL_UNAVAILABLE, code="approval_unavailable")
