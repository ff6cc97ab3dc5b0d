"""Writes of the game world that are not AI tool calls: set-up by people, invites, turns, and
who joins a campaign's live feed.

Every set-up write is announced to the table (source `user`) through the one publisher, in the
transaction that makes it, so every open page shows it without a reload. Each service is given
who acts (`by`) and decides whether they may with the world's rules (`campaigns.permissions`),
before its transaction; a refusal is recorded (from `ip`) and raised as Forbidden.
"""

import functools
import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone
from guardian.shortcuts import assign_perm, remove_perm

from campaigns.events import DiceRolled, Event, MemberAdded, MessageCreated, StateChanged
from campaigns.images import Image, checked_image
from campaigns.models import (
    ApprovalPolicyChange,
    Campaign,
    Chapter,
    ChatMessage,
    Creature,
    DiceRoll,
    Dungeon,
    Episode,
    Invite,
    MapBackground,
    Membership,
    Resource,
    SecurityEvent,
    Source,
    Turn,
)
from campaigns.permissions import (
    require_gm,
    require_may_create_creature,
    require_owner,
    require_policy_setter,
)
from campaigns.realtime import broadcast_on_commit, event
from campaigns.security import denial_record, recording_denials
from campaigns.selectors import campaign_get_for_member, invite_get_usable, map_free_cell
from campaigns.visibility import Sight, sight_of
from core.errors import Conflict, Forbidden, InvalidInput, NotFound

T = TypeVar("T")
REVERT_ANY_TURN = "campaigns.revert_any_turn"
# A creature made without naming its player: a player's own PC is theirs, anything else nobody's.
UNSAID: Any = object()


def _as_owner(campaign: Campaign, *, by: Any, ip: str | None, action: str) -> None:
    """Set-up is the owner's (`require_owner`); a refusal is recorded outside any transaction,
    so nothing rolls it back."""
    with recording_denials(user=by, ip=ip):
        require_owner(campaign=campaign, user=by, action=action)


def set_up_by_owner(service: Callable[..., T]) -> Callable[..., T]:
    """A set-up service the owner alone may call: the wrapped service takes `by` (who acts) and
    `ip` (for the security log) beside its own fields, checks `by` first (`_as_owner`, the
    refusal named after the service) and only then runs the service's own transaction."""

    @functools.wraps(service)
    def authorized(*, campaign: Campaign, by: Any, ip: str | None = None, **fields: Any) -> T:
        _as_owner(campaign, by=by, ip=ip, action=service.__name__)
        return service(campaign=campaign, **fields)

    return authorized


@transaction.atomic
def campaign_create(*, owner: Any, name: str, approval_policy: str | None = None) -> Campaign:
    """The owner becomes a member holding `revert_any_turn`, and the first episode begins."""
    campaign = Campaign.objects.create(
        owner=owner,
        name=name,
        **({"approval_policy": approval_policy} if approval_policy else {}),
    )
    Membership.objects.create(campaign=campaign, user=owner, role=Membership.Role.OWNER)
    assign_perm(REVERT_ANY_TURN, owner, campaign)
    Episode.objects.create(campaign=campaign, number=1)
    return campaign


def campaign_set_approval_policy(
    *, campaign: Campaign, by: Any, policy: str, via: str, ip: str | None = None
) -> ApprovalPolicyChange | None:
    """Set which tool calls wait for a human (the owner; in the admin, whoever may change a
    campaign there: `require_policy_setter`), and log who changed it from what to what."""
    with recording_denials(user=by, ip=ip):
        require_policy_setter(campaign=campaign, user=by, via=via)
    return _policy_set(campaign=campaign, by=by, policy=policy, via=via)


@transaction.atomic
def _policy_set(
    *, campaign: Campaign, by: Any, policy: str, via: str
) -> ApprovalPolicyChange | None:
    """The campaign row is locked, so two changes at once are logged in the order they took
    effect; setting the policy it already has changes and logs nothing (None)."""
    if policy not in Campaign.ApprovalPolicy.values:
        choices = ", ".join(Campaign.ApprovalPolicy.values)
        raise InvalidInput(f"approval_policy must be one of {choices}; got {policy!r}.")
    before = Campaign.objects.select_for_update().values_list("approval_policy", flat=True)
    current = before.get(pk=campaign.pk)
    campaign.approval_policy = policy
    if current == policy:
        return None
    Campaign.objects.filter(pk=campaign.pk).update(approval_policy=policy)
    return ApprovalPolicyChange.objects.create(
        campaign=campaign, by=by, from_policy=current, to_policy=policy, via=via
    )


# Bounds of a campaign's approval timeout, in seconds: a minute to a week.
APPROVAL_TIMEOUT_MIN, APPROVAL_TIMEOUT_MAX = 60, 7 * 24 * 3600
# Sent in the transaction that changed a campaign's approval timeout (sender=Campaign,
# campaign=the row): the log (a layer above) schedules its calls' expiry for the new deadline.
approval_timeout_changed = Signal()


def campaign_set_approval_timeout(
    *, campaign: Campaign, by: Any, seconds: int | None, via: str, ip: str | None = None
) -> Campaign:
    """Set how long a held call of this campaign waits for an answer before it expires (the
    owner; in the admin, whoever may change a campaign there, as for the policy), in seconds
    (APPROVAL_TIMEOUT_MIN to _MAX), or None for the site's APPROVAL_TIMEOUT. Calls waiting now
    expire at their new deadline: when they were held plus the new timeout."""
    if seconds is not None and not APPROVAL_TIMEOUT_MIN <= seconds <= APPROVAL_TIMEOUT_MAX:
        raise InvalidInput(
            f"approval_timeout must be {APPROVAL_TIMEOUT_MIN} to {APPROVAL_TIMEOUT_MAX} seconds "
            f"(a minute to a week), or null for the site's default; got {seconds!r}."
        )
    with recording_denials(user=by, ip=ip):
        require_policy_setter(campaign=campaign, user=by, via=via)
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        locked.approval_timeout_seconds = seconds
        locked.save(update_fields=["approval_timeout_seconds"])
        approval_timeout_changed.send(sender=Campaign, campaign=locked)
    campaign.approval_timeout_seconds = seconds
    return campaign


@set_up_by_owner
def membership_add(
    *, campaign: Campaign, username: str, can_revert_any: bool = False
) -> Membership:
    """The owner adds a member by username, or changes whether they hold `revert_any_turn`."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No user named {username!r}.")
    return _membership_set(campaign=campaign, user=user, can_revert_any=can_revert_any)


@transaction.atomic
def _membership_set(*, campaign: Campaign, user: Any, can_revert_any: bool) -> Membership:
    membership, created = Membership.objects.get_or_create(campaign=campaign, user=user)
    if not created and membership.role == Membership.Role.OWNER:
        raise Conflict("The owner is already a member.")
    if can_revert_any:
        assign_perm(REVERT_ANY_TURN, user, campaign)
    else:
        remove_perm(REVERT_ANY_TURN, user, campaign)
    _announce(
        campaign.pk,
        MemberAdded(
            user_id=user.pk,
            username=user.get_username(),
            role=membership.role,
            can_revert_any=can_revert_any,
        ),
    )
    return membership


def _announce(campaign_id: Any, payload: Event) -> None:
    """A person's set-up change, told to the table after commit (source `user`)."""
    broadcast_on_commit(campaign_id, [event(payload, source=Source.USER)])


def _row_added(campaign_id: Any, entity: str, row: dict[str, Any]) -> None:
    """A new row of the state dump: a `state_changed` with its fields as `/state/` lists them."""
    _announce(campaign_id, StateChanged(entity=entity, id=row["id"], fields=row))


def creature_create(
    *,
    campaign: Campaign,
    by: Any,
    kind: str,
    controlled_by: Any = UNSAID,
    ip: str | None = None,
    **fields: Any,
) -> Creature:
    """The owner creates any creature; a player only their own player character, which is
    theirs without saying so (`require_may_create_creature`). `fields` are the rest of the
    creature's, as `_creature_create` takes them (name, hp, max_hp, x, y)."""
    if controlled_by is UNSAID:
        own_pc = by.pk != campaign.owner_id and kind == Creature.Kind.PC
        controlled_by = by if own_pc else None
    with recording_denials(user=by, ip=ip):
        require_may_create_creature(
            campaign=campaign, user=by, kind=kind, controlled_by=controlled_by
        )
    return _creature_create(
        campaign=campaign, kind=kind, controlled_by=controlled_by, added_by=by, **fields
    )


@transaction.atomic
def _creature_create(
    *,
    campaign: Campaign,
    name: str,
    kind: str,
    hp: int,
    max_hp: int,
    controlled_by: Any = None,
    added_by: Any = None,
    x: int | None = None,
    y: int | None = None,
) -> Creature:
    """A creature placed where asked, or, without a position, on the map's free cell nearest
    its top-left corner (`map_free_cell`): new tokens never land stacked on one another."""
    if not 0 <= hp <= max_hp:
        raise InvalidInput("hp must be between 0 and max_hp.")
    if controlled_by is not None and kind != Creature.Kind.PC:
        raise InvalidInput("Only player characters have a controlling player.")
    if (
        controlled_by is not None
        and not Membership.objects.filter(campaign=campaign, user=controlled_by).exists()
    ):
        raise InvalidInput("The controlling player must be a member of the campaign.")
    if x is None or y is None:
        x, y = map_free_cell(campaign=campaign, near=(x or 0, y or 0))
    creature = Creature.objects.create(
        campaign=campaign,
        name=name,
        kind=kind,
        hp=hp,
        max_hp=max_hp,
        controlled_by=controlled_by,
        x=x,
        y=y,
        added_by=added_by,
        added_at=timezone.now() if added_by is not None else None,
    )
    shown = [f"{n}_id" if n == "controlled_by" else n for n in Creature.SHOWN]
    _row_added(campaign.pk, "creature", {"id": creature.pk, **_values(creature, shown)})
    return creature


MAP_MIN_SIDE, MAP_MAX_SIDE = 4, 100


def campaign_map_set(
    *,
    campaign: Campaign,
    by: Any,
    cols: int | None = None,
    rows: int | None = None,
    background: bytes | None = None,
    remove_background: bool = False,
    ip: str | None = None,
) -> Campaign:
    """The GM (the owner or a co-GM: `require_gm`) sets the battle map: its grid, cols × rows
    cells (MAP_MIN_SIDE to MAP_MAX_SIDE each), which stays as set, and its background image,
    checked and written anew by `campaigns.images.checked_image` (type by its content, size,
    sides, decoded whole, metadata left behind) or taken away.
    Told to the table as a `state_changed` of the entity `map`."""
    with recording_denials(user=by, ip=ip):
        require_gm(campaign=campaign, user=by, action="campaign_map_set")
    for side, value in (("cols", cols), ("rows", rows)):
        if value is not None and not MAP_MIN_SIDE <= value <= MAP_MAX_SIDE:
            raise InvalidInput(f"{side} must be {MAP_MIN_SIDE} to {MAP_MAX_SIDE}; got {value}.")
    image = checked_image(background) if background is not None else None
    return _map_set(
        campaign=campaign, by=by, cols=cols, rows=rows, image=image, remove=remove_background
    )


@transaction.atomic
def _map_set(
    *, campaign: Campaign, by: Any, cols: Any, rows: Any, image: Image | None, remove: bool
) -> Campaign:
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    locked.map_cols = cols or locked.map_cols
    locked.map_rows = rows or locked.map_rows
    locked.save(update_fields=["map_cols", "map_rows"])
    campaign.map_cols, campaign.map_rows = locked.map_cols, locked.map_rows
    current = MapBackground.objects.filter(campaign=locked).first()
    if image is not None:
        current, _ = MapBackground.objects.update_or_create(
            campaign=locked,
            defaults={
                "content_type": image.content_type,
                "data": image.data,
                "width": image.width,
                "height": image.height,
                "version": (current.version + 1) if current else 1,
                "uploaded_by": by,
            },
        )
    elif remove and current is not None:
        current.delete()
        current = None
    _announce(
        campaign.pk,
        StateChanged(
            entity="map",
            id=str(campaign.pk),
            fields={
                "cols": locked.map_cols,
                "rows": locked.map_rows,
                "background": current.version if current else None,
            },
        ),
    )
    return locked


def _values(row: Any, names: list[str]) -> dict[str, Any]:
    return {name: getattr(row, name) for name in names}


@set_up_by_owner
@transaction.atomic
def resource_create(
    *, campaign: Campaign, creature: Creature, name: str, current: int, maximum: int, recharge: str
) -> Resource:
    """The owner gives `creature`, of `campaign`, a resource."""
    if creature.campaign_id != campaign.pk:
        raise NotFound("No such creature in this campaign.")
    if not 0 <= current <= maximum:
        raise InvalidInput("current must be between 0 and maximum.")
    if Resource.objects.filter(creature=creature, name=name).exists():
        raise Conflict(f"{creature.name} already has a resource named {name!r}.")
    resource = Resource.objects.create(
        campaign_id=creature.campaign_id,
        creature=creature,
        name=name,
        current=current,
        maximum=maximum,
        recharge=recharge,
    )
    names = ["id", "creature_id", "name", "current", "maximum", "recharge"]
    _row_added(creature.campaign_id, "resource", _values(resource, names))
    return resource


@set_up_by_owner
@transaction.atomic
def chapter_create(*, campaign: Campaign, title: str) -> Chapter:
    """The owner appends a chapter; the first becomes the current one."""
    last = campaign.chapters.order_by("-position").values_list("position", flat=True).first()
    chapter = Chapter.objects.create(campaign=campaign, title=title, position=(last or 0) + 1)
    _row_added(campaign.pk, "chapter", _values(chapter, ["id", "title", "position"]))
    if campaign.current_chapter_id is None:
        Campaign.objects.filter(pk=campaign.pk).update(current_chapter=chapter)
        campaign.current_chapter = chapter
        fields = {"current_chapter_id": chapter.pk}
        _announce(campaign.pk, StateChanged(entity="campaign", id=str(campaign.pk), fields=fields))
    return chapter


@set_up_by_owner
@transaction.atomic
def dungeon_create(*, campaign: Campaign, name: str) -> Dungeon:
    """The owner adds a dungeon that `activate_dungeon` can later switch to."""
    dungeon = Dungeon.objects.create(campaign=campaign, name=name)
    _row_added(campaign.pk, "dungeon", _values(dungeon, ["id", "name"]))
    return dungeon


INVITE_TTL_MAX = timedelta(days=30)


def invite_create(
    *,
    campaign: Campaign,
    by: Any,
    expires_in: timedelta,
    max_uses: int | None,
    ip: str | None = None,
) -> tuple[Invite, str]:
    """A new invite link's row and its token, made by the owner; the token exists nowhere else,
    so the caller shows it once."""
    _as_owner(campaign, by=by, ip=ip, action="invite_create")
    if not timedelta(0) < expires_in <= INVITE_TTL_MAX:
        raise InvalidInput("An invite link lasts at most 30 days.")
    if max_uses is not None and max_uses < 1:
        raise InvalidInput("max_uses must be at least 1, or empty for any number.")
    token = secrets.token_urlsafe(32)
    invite = Invite.objects.create(
        campaign=campaign,
        token_hash=Invite.hash_token(token),
        created_by=by,
        expires_at=timezone.now() + expires_in,
        max_uses=max_uses,
    )
    return invite, token


def invite_revoke(*, campaign: Campaign, by: Any, invite_id: Any, ip: str | None = None) -> Invite:
    """The owner revokes a link: nobody joins with it any more; who already joined stays."""
    _as_owner(campaign, by=by, ip=ip, action="invite_revoke")
    invite = Invite.objects.filter(campaign=campaign, pk=invite_id).first()
    if invite is None:
        raise NotFound("No such invite.")
    if invite.revoked_at is None:
        invite.revoked_at = timezone.now()
        invite.save(update_fields=["revoked_at"])
    return invite


@transaction.atomic
def invite_accept(*, token: str, user: Any) -> Membership:
    """Join the invite's campaign as a player. The invite row is locked, so two people racing
    for a single-use link cannot both get in; a member who follows it again uses nothing up."""
    invite, member = invite_get_usable(token=token, user=user, lock=True)
    if member:
        return Membership.objects.get(campaign=invite.campaign, user=user)
    invite.uses += 1
    invite.save(update_fields=["uses"])
    return _membership_set(campaign=invite.campaign, user=user, can_revert_any=False)


@transaction.atomic
def turn_create(
    *, campaign: Campaign, actor: Any, message: str, queued: bool = False, retry_of: Any = None
) -> Turn:
    """A player's turn starts with their message; the GM's reply and tool calls join it. A
    `queued` turn waits for the GM (the message's event says so, so every client can show that
    the GM is thinking at once); otherwise the turn stays open."""
    turn = Turn.objects.create(
        campaign=campaign,
        actor=actor,
        status=Turn.Status.QUEUED if queued else Turn.Status.OPEN,
        retry_of=retry_of,
    )
    message_post(
        turn=turn,
        author=actor,
        role=ChatMessage.Role.PLAYER,
        source=Source.USER,
        content=message,
        gm=Turn.Status.QUEUED if queued else None,
    )
    return turn


def message_post(
    *,
    turn: Turn,
    author: Any,
    role: str,
    source: Source,
    content: str,
    gm: str | None = None,
) -> ChatMessage:
    """`gm` tells clients what the GM does about the message ("queued": it will answer)."""
    # The message and its event's number commit together; in a caller's transaction, with it
    # (no savepoint: no caller goes on after a failure here, and a turn's end posts two).
    with transaction.atomic(savepoint=False):
        message = ChatMessage.objects.create(
            campaign_id=turn.campaign_id,
            turn=turn,
            author=author,
            role=role,
            source=source,
            content=content,
        )
        broadcast_on_commit(
            turn.campaign_id,
            [
                event(
                    MessageCreated(
                        id=message.pk,
                        role=role,
                        content=content,
                        author=author.get_username() if author else None,
                        gm=gm,
                    ),
                    source=source,
                    turn=turn.pk,
                )
            ],
        )
    return message


@transaction.atomic
def dice_roll_record(
    *,
    campaign: Campaign,
    author: Any,
    formula: str,
    mode: str,
    dice: list[int],
    discarded: list[int],
    modifier: int,
    total: int,
    turn: Turn | None = None,
    by_gm: bool = False,
    tool_use_id: str = "",
) -> DiceRoll:
    """Put a roll in the feed and show it to every client (`dice_rolled`). The dice are rolled
    by the caller (`ai_tools.dice`, the one dice logic); this only keeps what they said."""
    shown = {
        "formula": formula,
        "mode": mode,
        "dice": dice,
        "discarded": discarded,
        "modifier": modifier,
        "total": total,
    }
    roll = DiceRoll.objects.create(
        campaign=campaign, turn=turn, author=author, by_gm=by_gm, tool_use_id=tool_use_id, **shown
    )
    rolled = DiceRolled(
        id=roll.pk, **shown, author=author.get_username() if author else None, by_gm=by_gm
    )
    source = Source.AI_TOOL_EXECUTION if by_gm else Source.USER
    broadcast_on_commit(campaign.pk, [event(rolled, source=source, turn=turn.pk if turn else None)])
    return roll


def feed_join(*, campaign_id: Any, user: Any, ip: str | None = None) -> Sight | None:
    """How a member sees the campaign's live feed (`campaigns.visibility`), or None for anyone
    who is not a member (now). A signed-in stranger probing a feed is a security event
    (`websocket_denied`, from `ip`); an anonymous handshake is refused before anything is
    revealed, and is not."""
    try:
        campaign = campaign_get_for_member(campaign_id=campaign_id, user=user)
    except NotFound:
        if getattr(user, "is_authenticated", False):
            denial = Forbidden(
                "Websocket refused: not a member of this campaign.",
                kind=SecurityEvent.Kind.WEBSOCKET_DENIED,
                target=f"ws:campaign:{campaign_id}",
            )
            denial_record(denial, user=user, ip=ip)
        return None
    return sight_of(campaign=campaign, user=user)
