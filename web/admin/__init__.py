"""The Django admin: the game world (campaigns' models) and the invocation log (read-only,
revertible through the service) with the security log. Registered when the admin autodiscovers
`web.admin`."""

from web.admin.campaigns import CampaignAdmin
from web.admin.invocations import ToolInvocationAdmin
from web.admin.security import SecurityEventAdmin

__all__ = ["CampaignAdmin", "SecurityEventAdmin", "ToolInvocationAdmin"]
