"""Who polices every table: the one test for audit staff, asked by the layers above."""

from typing import Any

# Django's name for the permission (the audit app's model); only a string here, so the world's
# reads (campaigns) may ask it without importing the log.
AUDIT_PERMISSION = "audit.revert_toolinvocation"


def is_audit_staff(user: Any) -> bool:
    """An active staff account holding the audit permission: it reads every campaign and its log,
    answers held calls and reverts anywhere (audit.permissions, the admin, analytics)."""
    return bool(
        getattr(user, "is_authenticated", False)
        and user.is_active
        and user.is_staff
        and user.has_perm(AUDIT_PERMISSION)
    )
