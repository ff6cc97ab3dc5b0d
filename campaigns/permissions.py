"""The world's two role rules: who runs a table, and what a player may act on.

Everything else about roles is built from these: the revert and approval policy
(`audit.permissions`), the tools' least privilege (`ai_tools.base.WriteTool.authorize`), the
token-move endpoint and the map's draggable tokens. The rule that matters here is "nobody may do
through an agent what they may not do by hand", so the agent's path and the hand's ask the
same two functions.
"""

from typing import Any

from guardian.core import ObjectPermissionChecker

from campaigns.models import Campaign, Creature
from core.permissions import is_audit_staff


def runs_table(*, campaign: Campaign, user: Any) -> bool:
    """The owner, the co-GMs (members holding `revert_any_turn`: the grant that makes a member a
    co-GM) and audit staff run the table: their hand and their agents have the GM's powers.
    Cheap facts first: the owner costs no query."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.pk == campaign.owner_id:
        return True
    if is_audit_staff(user):
        return True
    return ObjectPermissionChecker(user).has_perm("revert_any_turn", campaign)


def may_act_on(*, kind: str, controlled_by_id: Any, user_id: Any, gm: bool) -> bool:
    """A player acts on their own player character; whoever has the GM's powers (`gm`) acts on
    any creature. The one rule for a token's drag, a player's tool call and the map's marks."""
    return gm or (kind == Creature.Kind.PC and controlled_by_id == user_id)
