"""The world's role rules: who polices every table, who plays at one, who runs it, what a
player may act on and set up, and whose agent may call tools in a turn.

Everything else about roles is built from these: the revert and approval policy
(`audit.permissions`), the tools' least privilege (`ai_tools.base.WriteTool.authorize`), the
token move and the map's draggable tokens. The rule that matters here is "nobody may do
through an agent what they may not do by hand", so the agent's path and the hand's ask the
same functions.

The services ask them, never a surface: each `require_*` raises `Forbidden` carrying what the
security log needs, and the service that asked records it (`campaigns.security.recording_denials`).
"""

from typing import Any

from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType

from campaigns.models import (
    ApprovalPolicyChange,
    Campaign,
    CampaignGroupObjectPermission,
    CampaignUserObjectPermission,
    Creature,
    Membership,
    SecurityEvent,
    Turn,
)
from core.errors import Forbidden
from core.queries import plain_rows, plain_sql

# Django's name for the permission (the audit app's model); only a string here, so the world's
# rules may ask it without importing the log.
AUDIT_PERMISSION = "audit.revert_toolinvocation"
# Django's own permission to edit a campaign: whoever the admin lets change one.
CHANGE_CAMPAIGN = "campaigns.change_campaign"


def is_audit_staff(user: Any) -> bool:
    """An active staff account holding the audit permission: it reads every campaign and its log,
    answers held calls and reverts anywhere (audit.permissions, the admin, analytics)."""
    return bool(
        getattr(user, "is_authenticated", False)
        and user.is_active
        and user.is_staff
        and user.has_perm(AUDIT_PERMISSION)
    )


def is_member(*, campaign: Campaign, user: Any) -> bool:
    return Membership.objects.filter(campaign_id=campaign.pk, user_id=user.pk).exists()


def runs_table(*, campaign: Campaign, user: Any) -> bool:
    """The owner, the co-GMs (members holding `revert_any_turn`: the grant that makes a member a
    co-GM) and audit staff run the table: their hand and their agents have the GM's powers.
    Cheap facts first: the owner costs no query."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.pk == campaign.owner_id:
        return True
    if is_audit_staff(user) or user.is_superuser:  # django-guardian grants a superuser all
        return True
    return _holds_on(user, campaign, "revert_any_turn")


def _holds_on(user: Any, campaign: Campaign, codename: str) -> bool:
    """Whether `user` (active, not a superuser) holds the object permission `codename` on
    `campaign`, given to them or to one of their groups: django-guardian's
    `ObjectPermissionChecker.has_perm`, asked in one statement (the checker runs two per
    request, and every surface asks on every request). The grants are the campaign's own
    tables (`CampaignUserObjectPermission`, its group twin)."""
    # Raw SQL: asked on every request of every surface (measured in the web process's profile
    # under load: the ORM's two Exists built and compiled cost several times the statement)
    sql = plain_sql(
        "SELECT EXISTS (SELECT 1 FROM {g} g JOIN {p} p ON p.{p:id} = g.{g:permission} "
        "WHERE g.{g:content_object} = %s AND g.{g:user} = %s "
        "AND p.{p:codename} = %s AND p.{p:content_type} = %s) "
        "OR EXISTS (SELECT 1 FROM {h} h JOIN {p} p ON p.{p:id} = h.{h:permission} "
        "JOIN {m} m ON m.{m:group} = h.{h:group} "
        "WHERE h.{h:content_object} = %s AND m.{m:user} = %s "
        "AND p.{p:codename} = %s AND p.{p:content_type} = %s)",
        g=CampaignUserObjectPermission,
        h=CampaignGroupObjectPermission,
        p=Permission,
        m=User.groups.through,
    )
    # Django caches the content type: no query
    grant = [campaign.pk, user.pk, codename, ContentType.objects.get_for_model(Campaign).pk]
    return plain_rows(sql, grant * 2)[0][0]


def may_act_on(*, kind: str, controlled_by_id: Any, user_id: Any, gm: bool) -> bool:
    """A player acts on their own player character; whoever has the GM's powers (`gm`) acts on
    any creature. The one rule for a token's drag, a player's tool call and the map's marks."""
    return gm or (kind == Creature.Kind.PC and controlled_by_id == user_id)


def _refused(detail: str, *, campaign: Campaign, action: str) -> Forbidden:
    """A refusal of set-up or play, as the security log records it (`admin_denied`)."""
    return Forbidden(detail, kind=SecurityEvent.Kind.ADMIN_DENIED, campaign=campaign, target=action)


def require_owner(*, campaign: Campaign, user: Any, action: str) -> None:
    """Set-up (members, creatures, resources, chapters, dungeons, invites) is the owner's job.
    Checked on the loaded campaign's owner id, so it costs no query."""
    if user.pk != campaign.owner_id:
        raise _refused("Only the campaign owner may do this.", campaign=campaign, action=action)


def require_member(*, campaign: Campaign, user: Any, action: str) -> None:
    """Staff may see every campaign to police it; playing in one takes membership."""
    if user.pk != campaign.owner_id and not is_member(campaign=campaign, user=user):
        detail = "Only members of the campaign may do this."
        raise _refused(detail, campaign=campaign, action=action)


def require_gm(*, campaign: Campaign, user: Any, action: str) -> None:
    """The GM's own hand during play is for those who run the table: the owner and the co-GMs,
    who are the holders of `revert_any_turn` (the grant that makes a member a co-GM), so the one
    revert policy answers this too."""
    if not runs_table(campaign=campaign, user=user):
        detail = "Only the campaign owner or a co-GM may do this."
        raise _refused(detail, campaign=campaign, action=action)


def require_policy_setter(*, campaign: Campaign, user: Any, via: str) -> None:
    """The owner sets the approval policy, from the API and the page; in the admin, so does
    whoever Django's admin lets change a campaign (`campaigns.change_campaign`)."""
    if via == ApprovalPolicyChange.Via.ADMIN and user.has_perm(CHANGE_CAMPAIGN):
        return
    require_owner(campaign=campaign, user=user, action="campaign_set_policy")


def require_may_create_creature(
    *, campaign: Campaign, user: Any, kind: str, controlled_by: Any
) -> None:
    """The owner builds the world; a player may add only their own player character."""
    if user.pk == campaign.owner_id:
        return
    require_member(campaign=campaign, user=user, action="creature_create")
    if kind != "pc" or getattr(controlled_by, "pk", None) != user.pk:
        detail = "Players may only create their own player character."
        raise _refused(detail, campaign=campaign, action="creature_create")


def require_tool_caller(*, campaign: Campaign, user: Any, turn: Turn) -> None:
    """Who may post a tool call into a turn (an agent's call): the turn's actor (their agent
    plays for them) or the campaign owner (who runs the table). Cheap facts only (two ids
    already loaded): no query. A refusal is a `tool_call_denied` security event."""
    if user.pk not in (turn.actor_id, campaign.owner_id):
        raise Forbidden(
            "Only the turn's actor or the campaign owner may post tool calls into it.",
            kind=SecurityEvent.Kind.TOOL_CALL_DENIED,
            campaign=campaign,
            target=f"turn:{turn.pk}",
        )


def require_may_move_token(*, campaign: Campaign, user: Any, creature: Creature) -> None:
    """A person's own drag of a token (`may_act_on`); the GM's own `move_token` calls are not
    people's moves."""
    require_member(campaign=campaign, user=user, action="move_token")
    gm = runs_table(campaign=campaign, user=user)
    if not may_act_on(
        kind=creature.kind, controlled_by_id=creature.controlled_by_id, user_id=user.pk, gm=gm
    ):
        raise Forbidden(
            "Players may only move their own character's token.",
            kind=SecurityEvent.Kind.TOOL_CALL_DENIED,
            campaign=campaign,
            target=f"creature:{creature.pk}",
        )
