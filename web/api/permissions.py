"""Who may set up a campaign and play in it. Reverting has its own policy
(`audit.permissions.may_revert`); these are the simpler role checks around it.

Each check raises `Forbidden` carrying what `recording_denials` needs for the security log, so a
view wraps its checks in `recording_denials` and every 403 leaves a `SecurityEvent`.
"""

from typing import Any

from audit.models import SecurityEvent
from campaigns.models import Campaign, Creature
from campaigns.permissions import may_act_on, runs_table
from campaigns.selectors import is_member
from core.errors import Forbidden

# The token's drag is the world's one rule for acting on a creature (`may_act_on`); the map
# (web/pages/board.py) marks tokens with it under this name.
may_move_token = may_act_on


def require_owner(*, campaign: Campaign, user: Any, action: str) -> None:
    """Set-up (members, creatures, resources, chapters, dungeons) is the owner's job.
    Checked on the loaded campaign's owner id, so it costs no query."""
    if user.pk != campaign.owner_id:
        raise Forbidden(
            "Only the campaign owner may do this.",
            kind=SecurityEvent.Kind.ADMIN_DENIED,
            campaign=campaign,
            target=action,
        )


def require_member(*, campaign: Campaign, user: Any, action: str) -> None:
    """Staff may see every campaign to police it; playing in one takes membership."""
    if user.pk != campaign.owner_id and not is_member(campaign=campaign, user=user):
        raise Forbidden(
            "Only members of the campaign may do this.",
            kind=SecurityEvent.Kind.ADMIN_DENIED,
            campaign=campaign,
            target=action,
        )


def require_may_create_creature(
    *, campaign: Campaign, user: Any, kind: str, controlled_by: Any
) -> None:
    """The owner builds the world; a player may add only their own player character."""
    if user.pk == campaign.owner_id:
        return
    require_member(campaign=campaign, user=user, action="creature_create")
    if kind != "pc" or getattr(controlled_by, "pk", None) != user.pk:
        raise Forbidden(
            "Players may only create their own player character.",
            kind=SecurityEvent.Kind.ADMIN_DENIED,
            campaign=campaign,
            target="creature_create",
        )


def require_may_move_token(*, campaign: Campaign, user: Any, creature: Creature) -> None:
    """`may_move_token`, enforced; the GM's own `move_token` calls are not people's moves."""
    require_member(campaign=campaign, user=user, action="move_token")
    gm = runs_table(campaign=campaign, user=user)
    if not may_move_token(
        kind=creature.kind, controlled_by_id=creature.controlled_by_id, user_id=user.pk, gm=gm
    ):
        raise Forbidden(
            "Players may only move their own character's token.",
            kind=SecurityEvent.Kind.TOOL_CALL_DENIED,
            campaign=campaign,
            target=f"creature:{creature.pk}",
        )


def require_gm(*, campaign: Campaign, user: Any, action: str) -> None:
    """The GM's own hand during play is for those who run the table: the owner and the co-GMs,
    who are the holders of `revert_any_turn` (the grant that makes a member a co-GM), so the one
    revert policy answers this too."""
    if not runs_table(campaign=campaign, user=user):
        raise Forbidden(
            "Only the campaign owner or a co-GM may do this.",
            kind=SecurityEvent.Kind.ADMIN_DENIED,
            campaign=campaign,
            target=action,
        )
