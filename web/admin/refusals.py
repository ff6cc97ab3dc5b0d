"""Every write the admin refuses leaves one SecurityEvent, as a refusal through the API does.

The services record their own refusals of a member without the right (`revert_denied`,
`approval_denied`, through `campaigns.security.recording_denials`). Two kinds they cannot: a
campaign the staff member may not see (the service's NotFound, which the API answers a stranger
with, unrecorded, so as to reveal nothing; here a staff account has reached for a table it does
not police), and Django's own refusal of an admin write view (PermissionDenied: no change, add
or delete permission). The admin tells the security log of those, as `admin_denied`, through
the same writer (`campaigns.security.denial_record`), so one function writes every security
event.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.http import HttpRequest

from audit.models import SecurityEvent
from campaigns.models import Campaign
from campaigns.security import denial_record
from core.api.base import client_ip
from core.errors import Forbidden, NotFound

NOT_THEIRS = "Neither a member of this campaign nor audit staff: may not {action} it here."
NO_PERMISSION = "No admin permission to {action} this {name}."
# A target named from the URL (an object id) is cut to what the column holds.
TARGET = SecurityEvent._meta.get_field("target").max_length


def admin_denial(request: HttpRequest, obj: Any, *, target: str, detail: str) -> Forbidden:
    """Record a refusal of `request.user`'s write on `obj` as `admin_denied` and return it, for
    the caller to tell staff or raise. The campaign is `obj`'s (read only now, on a refusal)."""
    campaign = obj if isinstance(obj, Campaign) else getattr(obj, "campaign", None)
    denial = Forbidden(
        detail, kind=SecurityEvent.Kind.ADMIN_DENIED, campaign=campaign, target=target[:TARGET]
    )
    denial_record(denial, user=request.user, ip=client_ip(request))
    return denial


@contextmanager
def service_refusals(request: HttpRequest, obj: Any, *, target: str, action: str) -> Iterator[None]:
    """Around a service call on `obj`: its Forbidden passes on as the service recorded it; its
    NotFound (a campaign this staff member may not see) is recorded and passes on as Forbidden,
    so the caller has one refusal to tell staff about."""
    try:
        yield
    except NotFound as refused:
        detail = NOT_THEIRS.format(action=action)
        raise admin_denial(request, obj, target=target, detail=detail) from refused
