"""The security log's one writer: every refused attempt of a signed-in person leaves one
`SecurityEvent` (who, what, on which campaign, from where).

A service records its own refusals: it runs its checks inside `recording_denials`, outside its
transaction, so the rollback of what it refused cannot erase the record. A surface whose own
framework refuses (the admin's write views) tells the log with `denial_record`; it decides
nothing itself.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from campaigns.models import SecurityEvent
from core.errors import Forbidden


def denial_record(denial: Forbidden, *, user: Any, ip: str | None) -> SecurityEvent:
    """Write the refusal `denial` of `user` (its kind, campaign and target as it carries them)."""
    return SecurityEvent.objects.create(
        kind=denial.extra.get("kind", SecurityEvent.Kind.REVERT_DENIED),
        user=user if getattr(user, "is_authenticated", False) else None,
        campaign=denial.extra.get("campaign"),
        target=str(denial.extra.get("target", "")),
        ip=ip,
        detail={"message": denial.detail},
    )


@contextmanager
def recording_denials(*, user: Any, ip: str | None) -> Iterator[None]:
    """Wrap a service's checks (outside its transaction): every Forbidden leaves a
    SecurityEvent, once (a denial the service has already recorded says so: `recorded`)."""
    try:
        yield
    except Forbidden as denial:
        if not denial.extra.get("recorded"):
            denial_record(denial, user=user, ip=ip)
        raise
