"""The audit app in the Django admin: the invocation log (read-only, revertible through the
service) and the security log. Registered when the admin autodiscovers `audit.admin`."""

from audit.admin.invocations import ToolInvocationAdmin
from audit.admin.security import SecurityEventAdmin

__all__ = ["SecurityEventAdmin", "ToolInvocationAdmin"]
