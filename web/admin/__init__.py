"""The Django admin: the game world (campaigns' models) and the invocation log (read-only,
revertible through the service) with the security log. Registered when the admin autodiscovers
`web.admin`."""

from django.contrib import admin

from web.admin.campaigns import CampaignAdmin
from web.admin.invocations import ToolInvocationAdmin
from web.admin.security import SecurityEventAdmin

# The changelists need the width at 1280 px: the breadcrumbs and the index lead between models.
admin.site.enable_nav_sidebar = False

__all__ = ["CampaignAdmin", "SecurityEventAdmin", "ToolInvocationAdmin"]
