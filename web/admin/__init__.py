"""The Django admin: the game world (campaigns' models) and the invocation log (read-only,
revertible through the service) with the security log. Registered when the admin autodiscovers
`web.admin`."""

from django.contrib import admin

from web.admin.campaigns import CampaignAdmin
from web.admin.invocations import ToolInvocationAdmin
from web.admin.security import SecurityEventAdmin

# The changelists need the width at 1280 px: the breadcrumbs and the index lead between models.
admin.site.enable_nav_sidebar = False
# The product's name, not Django's stock "Django administration".
admin.site.site_header = "Undoable GM · admin console"
admin.site.site_title = "Undoable GM admin"
admin.site.index_title = "The invocation log, the campaigns and the security log"

__all__ = ["CampaignAdmin", "SecurityEventAdmin", "ToolInvocationAdmin"]
