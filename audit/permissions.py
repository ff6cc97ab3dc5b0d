"""The log's rules: who may revert, approve or refuse a held call, and read a campaign's
figures. The services ask them (the revert, approval and analytics services, the GM's cancel
and retry); a surface draws what they answer through `audit.selectors.viewer_rights` and
enforces nothing itself.

They are built on the world's rules (`campaigns.permissions`: who runs the table, what a player
acts on).
"""

from functools import cached_property
from typing import Any

from audit.models import SecurityEvent
from campaigns.models import Campaign
from campaigns.permissions import is_audit_staff, may_act_on, runs_table
from campaigns.visibility import Sight
from core.errors import Forbidden


class _Someone:
    """A signed-in person known by their primary key alone, for drawing what a class of viewer
    sees (`Rights.alike`, `Rights.as_user`)."""

    is_authenticated = True
    is_active = True

    def __init__(self, pk: Any) -> None:
        self.pk = pk

    def get_username(self) -> str:
        return ""


_NOBODY = 0  # no user has this primary key (ids start at 1)


class Rights:
    """What one person may do at one table: the rules, decided from facts read once. Cheap
    facts first: whether they are signed in and active, the owner or a call's actor costs no
    query; whether they run the table (`runs_table`) is asked once, on first use. A service asks
    through the functions below (one `Rights` per check); a surface gets one per request from
    `audit.selectors.viewer_rights`, to draw its buttons, draggable tokens and the GM's view."""

    def __init__(self, *, campaign: Campaign, user: Any) -> None:
        self.campaign, self.user = campaign, user
        self.active = bool(getattr(user, "is_authenticated", False) and user.is_active)

    def alike(self) -> "Rights":
        """The rights of someone with this person's sight at this table (the GM's or a
        player's) who is nobody in particular: no call, turn or character is theirs. What is
        drawn once for everyone alike is drawn with these (web/pages/fragments.py), and each
        viewer's own pieces with their own."""
        return self.as_user(_NOBODY)

    def as_user(self, user_id: Any) -> "Rights":
        """The rights of the person `user_id` if they had this person's sight: how a drawing
        made once for a class of viewers shows each viewer of it their own pieces (a player's
        own character, web/pages/fragments.py)."""
        rights = Rights(campaign=self.campaign, user=_Someone(user_id))
        rights.__dict__["gm"] = self.gm  # the cached answer: runs_table is not asked again
        return rights

    def is_person(self, user_id: Any) -> bool:
        """Whether they are the (active) person `user_id`: a call's or a turn's actor."""
        return self.active and self.user.pk == user_id

    @property
    def owner(self) -> bool:
        return self.user.pk == self.campaign.owner_id

    @cached_property
    def gm(self) -> bool:
        """They run the table (the owner, a co-GM, audit staff): the GM's powers and sight."""
        return runs_table(campaign=self.campaign, user=self.user)

    @property
    def sight(self) -> Sight:
        return Sight.of(gm=self.gm)

    def reverts(self, actor_id: Any) -> bool:
        """The original actor, or whoever runs the table (`runs_table`: the owner, a co-GM
        holding `revert_any_turn`, staff holding `audit.revert_toolinvocation`)."""
        return self.is_person(actor_id) or self.gm

    def approves(self, actor_id: Any) -> bool:
        """Who may let a held tool call run: the owner (who answers for the table, on their own
        turn too: nobody ranks above them to ask), a co-GM holding `revert_any_turn`, or staff
        holding `audit.revert_toolinvocation` — but not the turn's actor otherwise: the person
        the AI acts for does not sign off on it."""
        if self.is_person(actor_id) and not self.owner:
            return False
        return self.gm

    def rejects(self, actor_id: Any) -> bool:
        """Who may refuse a held call: any approver, and the turn's actor (withdrawing it)."""
        return self.is_person(actor_id) or self.approves(actor_id)

    def objects(self, affected_player_ids: Any) -> bool:
        """Who may object to a held critical call: the player of a character it would change
        (`audit.selectors.held_call_affected_players`). Their objection rejects the call with
        their reason; letting it run stays with the approvers."""
        return self.active and self.user.pk in affected_player_ids

    def moves(self, *, kind: str, controlled_by_id: Any) -> bool:
        """Whether they may drag this creature's token (`may_act_on`: a player their own PC,
        the GM any)."""
        return may_act_on(
            kind=kind, controlled_by_id=controlled_by_id, user_id=self.user.pk, gm=self.gm
        )


def may_revert(*, user: Any, campaign: Campaign, actor_id: int | None) -> bool:
    """The one revert policy (`Rights.reverts`): the API, the admin and the GM's cancel and
    retry ask it; the actor and the owner cost no query."""
    return Rights(campaign=campaign, user=user).reverts(actor_id)


def may_approve(*, user: Any, campaign: Campaign, actor_id: int) -> bool:
    return Rights(campaign=campaign, user=user).approves(actor_id)


def may_reject(*, user: Any, campaign: Campaign, actor_id: int) -> bool:
    return Rights(campaign=campaign, user=user).rejects(actor_id)


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


def authorize_objection(
    *, user: Any, campaign: Campaign, affected_player_ids: Any, target: str
) -> None:
    """Raise Forbidden (recorded as `approval_denied`) unless `user` plays a character the held
    critical call would change (`Rights.objects`)."""
    if not Rights(campaign=campaign, user=user).objects(affected_player_ids):
        raise Forbidden(
            "Only the player of a character this critical call would change may object to it.",
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
    `recording_denials` outside the caller's transaction, so a rollback cannot erase it."""
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


def authorize_replay(*, user: Any, campaign: Campaign) -> None:
    """Replaying a recorded turn against another model (gm/replay.py) reads a table's play and
    sends it to a model: staff holding the audit permission, as they read every log."""
    if not is_audit_staff(user):
        raise Forbidden(
            "Only staff who read the invocation log may replay a turn.",
            kind=SecurityEvent.Kind.ADMIN_DENIED,
            campaign=campaign,
            target="gm_replay",
        )
