"""Reads the campaign API needs, shaped so each list costs a fixed number of queries."""

from typing import Any

from django.db.models import Prefetch, QuerySet

from audit.models import ToolInvocation
from campaigns.models import (
    Campaign,
    CampaignUserObjectPermission,
    ChatMessage,
    Membership,
    Turn,
)


def campaign_list_for_member(*, user: Any) -> QuerySet[Campaign]:
    return Campaign.objects.filter(memberships__user_id=user.pk).select_related("owner")


def campaign_members(*, campaign: Campaign) -> list[dict[str, Any]]:
    """Members with their role and whether they hold `revert_any_turn`: two queries, however
    many members (the grant is read from guardian's direct-FK table)."""
    granted = set(
        CampaignUserObjectPermission.objects.filter(
            content_object=campaign, permission__codename="revert_any_turn"
        ).values_list("user_id", flat=True)
    )
    memberships = (
        Membership.objects.filter(campaign=campaign).select_related("user").order_by("joined_at")
    )
    return [
        {
            "username": m.user.get_username(),
            "role": m.role,
            "can_revert_any": m.user_id in granted,
        }
        for m in memberships
    ]


def turn_list(*, campaign: Campaign) -> QuerySet[Turn]:
    """Turns newest first with their messages and invocation summaries: four queries a page."""
    return (
        Turn.objects.filter(campaign=campaign)
        .select_related("actor", "reverted_by")
        .prefetch_related(
            Prefetch(
                "messages",
                queryset=ChatMessage.objects.select_related("author").order_by("created_at", "id"),
            ),
            Prefetch(
                "invocations",
                queryset=ToolInvocation.objects.order_by("sequence").only(
                    "id", "turn_id", "sequence", "tool_name", "tool_tier", "status"
                ),
            ),
        )
    )


def turn_get(*, campaign: Campaign, turn_id: Any) -> Turn:
    return turn_list(campaign=campaign).get(pk=turn_id)
