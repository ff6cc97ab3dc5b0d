"""Who may revert: the one policy function. The API, the admin and the websocket call it."""

from typing import Any

from audit.models import SecurityEvent
from campaigns.models import Campaign
from campaigns.permissions import is_audit_staff, runs_table
from core.errors import Forbidden


def may_revert(*, user: Any, campaign: Campaign, actor_id: int | None) -> bool:
    """The original actor, or whoever runs the table (`runs_table`: the owner, a co-GM holding
    `revert_any_turn`, staff holding `audit.revert_toolinvocation`). Cheap facts first: the
    actor and the owner cost no query."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.pk == actor_id:
        return True
    return runs_table(campaign=campaign, user=user)


def may_approve(*, user: Any, campaign: Campaign, actor_id: int) -> bool:
    """Who may let a held tool call run: the owner (who answers for the table, on their own
    turn too: nobody ranks above them to ask), a co-GM holding `revert_any_turn`, or staff
    holding `audit.revert_toolinvocation` — but not the turn's actor otherwise: the person the
    AI acts for does not sign off on it. Cheap facts first, as in `may_revert`."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.pk == actor_id and user.pk != campaign.owner_id:
        return False
    return runs_table(campaign=campaign, user=user)


def may_reject(*, user: Any, campaign: Campaign, actor_id: int) -> bool:
    """Who may refuse a held call: any approver, and the turn's actor (withdrawing it)."""
    if getattr(user, "is_authenticated", False) and user.is_active and user.pk == actor_id:
        return True
    return may_approve(user=user, campaign=campaign, actor_id=actor_id)


def authorize_approval(
    *, user: Any, campaign: Campaign, actor_id: int, target: str, reject: bool = False
) -> None:
    """Raise Forbidden (recorded as `approval_denied`) unless `user` may approve — or, with
    `reject`, refuse — a held call on a turn of `actor_id`."""
    rule = may_reject if reject else may_approve
    if not rule(user=user, campaign=campaign, actor_id=actor_id):
        raise Forbidden(
            "Only the campaign owner, a co-GM or audit staff may approve this call; "
            "the turn's player may withdraw it."
            if not reject
            else "Only the turn's player, the campaign owner, a co-GM or audit staff may "
            "reject this call.",
            kind=SecurityEvent.Kind.APPROVAL_DENIED,
            campaign=campaign,
            target=target,
        )


def authorize_revert(
    *,
    user: Any,
    campaign: Campaign,
    actor_id: int,
    target: str,
    kind: str = SecurityEvent.Kind.REVERT_DENIED,
) -> None:
    """Raise Forbidden unless `may_revert`. Callers have already established that the user may
    see the campaign (otherwise they raise NotFound). The denial is recorded by
    `campaigns.security.recording_denials` outside the caller's transaction, so a rollback
    cannot erase it."""
    if not may_revert(user=user, campaign=campaign, actor_id=actor_id):
        raise Forbidden(
            "Only the original actor, the campaign owner or a co-GM may do this.",
            kind=kind,
            campaign=campaign,
            target=target,
        )


def authorize_analytics(*, user: Any, campaign: Campaign) -> None:
    """A campaign's figures are its owner's business (and staff's): another member is refused,
    for the security log."""
    if campaign.owner_id != user.pk and not is_audit_staff(user):
        raise Forbidden(
            "Only the campaign owner (or staff) may read its analytics.",
            kind=SecurityEvent.Kind.ADMIN_DENIED,
            campaign=campaign,
            target="analytics",
        )
