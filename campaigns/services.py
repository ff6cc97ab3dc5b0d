"""Writes of the game world that are not AI tool calls: set-up by people, and turns."""

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from guardian.shortcuts import assign_perm, remove_perm

from campaigns.models import (
    ApprovalPolicyChange,
    Campaign,
    Chapter,
    ChatMessage,
    Creature,
    DiceRoll,
    Dungeon,
    Episode,
    Membership,
    Resource,
    Turn,
)
from campaigns.realtime import EventSource, broadcast_on_commit, event
from core.errors import Conflict, InvalidInput, NotFound

REVERT_ANY_TURN = "campaigns.revert_any_turn"


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


@transaction.atomic
def campaign_set_approval_policy(
    *, campaign: Campaign, by: Any, policy: str, via: str
) -> ApprovalPolicyChange | None:
    """Set which tool calls wait for a human, and log who changed it from what to what. The
    campaign row is locked, so two changes at once are logged in the order they took effect;
    setting the policy it already has changes and logs nothing (None)."""
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


@transaction.atomic
def membership_add(
    *, campaign: Campaign, username: str, can_revert_any: bool = False
) -> Membership:
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No user named {username!r}.")
    membership, created = Membership.objects.get_or_create(campaign=campaign, user=user)
    if not created and membership.role == Membership.Role.OWNER:
        raise Conflict("The owner is already a member.")
    if can_revert_any:
        assign_perm(REVERT_ANY_TURN, user, campaign)
    else:
        remove_perm(REVERT_ANY_TURN, user, campaign)
    return membership


def creature_create(
    *,
    campaign: Campaign,
    name: str,
    kind: str,
    hp: int,
    max_hp: int,
    controlled_by: Any = None,
    x: int = 0,
    y: int = 0,
) -> Creature:
    if not 0 <= hp <= max_hp:
        raise InvalidInput("hp must be between 0 and max_hp.")
    if controlled_by is not None and kind != Creature.Kind.PC:
        raise InvalidInput("Only player characters have a controlling player.")
    if (
        controlled_by is not None
        and not Membership.objects.filter(campaign=campaign, user=controlled_by).exists()
    ):
        raise InvalidInput("The controlling player must be a member of the campaign.")
    return Creature.objects.create(
        campaign=campaign,
        name=name,
        kind=kind,
        hp=hp,
        max_hp=max_hp,
        controlled_by=controlled_by,
        x=x,
        y=y,
    )


def resource_create(
    *, creature: Creature, name: str, current: int, maximum: int, recharge: str
) -> Resource:
    if not 0 <= current <= maximum:
        raise InvalidInput("current must be between 0 and maximum.")
    if Resource.objects.filter(creature=creature, name=name).exists():
        raise Conflict(f"{creature.name} already has a resource named {name!r}.")
    return Resource.objects.create(
        campaign_id=creature.campaign_id,
        creature=creature,
        name=name,
        current=current,
        maximum=maximum,
        recharge=recharge,
    )


def chapter_create(*, campaign: Campaign, title: str) -> Chapter:
    last = campaign.chapters.order_by("-position").values_list("position", flat=True).first()
    chapter = Chapter.objects.create(campaign=campaign, title=title, position=(last or 0) + 1)
    if campaign.current_chapter_id is None:
        Campaign.objects.filter(pk=campaign.pk).update(current_chapter=chapter)
        campaign.current_chapter = chapter
    return chapter


def dungeon_create(*, campaign: Campaign, name: str) -> Dungeon:
    return Dungeon.objects.create(campaign=campaign, name=name)


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
        source=ChatMessage.Source.USER,
        content=message,
        gm="queued" if queued else None,
    )
    return turn


def message_post(
    *,
    turn: Turn,
    author: Any,
    role: str,
    source: ChatMessage.Source,
    content: str,
    gm: str | None = None,
) -> ChatMessage:
    """`gm` tells clients what the GM does about the message ("queued": it will answer)."""
    with transaction.atomic():
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
                    "message_created",
                    {
                        "id": message.pk,
                        "role": role,
                        "content": content,
                        "author": author.get_username() if author else None,
                        "gm": gm,
                    },
                    source=EventSource(source),
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
    data = {
        "id": roll.pk,
        **shown,
        "author": author.get_username() if author else None,
        "by_gm": by_gm,
    }
    source = EventSource.AI_TOOL_EXECUTION if by_gm else EventSource.USER
    broadcast_on_commit(
        campaign.pk,
        [event("dice_rolled", data, source=source, turn=turn.pk if turn else None)],
    )
    return roll
