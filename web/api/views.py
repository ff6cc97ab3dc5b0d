"""Campaign set-up and state. Each view validates, calls one service, serializes (the turns
are `web.api.turns`).

Every path under a campaign first resolves the campaign with `campaign_get_visible`, so a
non-member gets 404 before anything else is looked at. Who may is the service's to decide, with
the caller and their address: its refusal (403) is written to the security log there.
"""

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns import services
from campaigns.models import ApprovalPolicyChange, Campaign
from campaigns.selectors import campaign_list_for_member, campaign_state_at_seq, creature_get
from campaigns.visibility import sight_of
from core.api.base import (
    ApiListView,
    ApiView,
    client_ip,
    list_schema,
    with_post_schema,
)
from core.api.errors import error_responses
from web.api import serializers as s
from web.shared import validated, visible_campaign


@list_schema("campaigns", "Campaigns where the caller is a member")
class CampaignListView(ApiListView):
    """Campaigns the caller plays in, and creating one (the caller becomes its owner,
    holding `revert_any_turn`)."""

    serializer_class = s.CampaignSummarySerializer
    ordering = "-created_at"

    def get_queryset(self):
        return campaign_list_for_member(user=self.request.user)

    @extend_schema(
        summary="Create a campaign; the caller becomes its owner",
        request=s.CampaignCreateInput,
        responses={201: s.CampaignSerializer, **error_responses()},
    )
    def post(self, request: Request) -> Response:
        data = validated(s.CampaignCreateInput, request.data)
        campaign = services.campaign_create(owner=request.user, **data)
        return Response(s.CampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["campaigns"])
class CampaignDetailView(ApiView):
    """A campaign with its members, their roles and who holds the revert grant. Its owner may
    change its approval policy; every change is logged (who, from, to, when)."""

    @extend_schema(responses={200: s.CampaignSerializer, **error_responses()})
    def get(self, request: Request, campaign_id: Any) -> Response:
        return Response(s.CampaignSerializer(visible_campaign(request, campaign_id)).data)

    @extend_schema(
        summary="Change the approval policy or the approval timeout (the owner)",
        request=s.CampaignUpdateInput,
        responses={200: s.CampaignSerializer, **error_responses(403)},
    )
    def patch(self, request: Request, campaign_id: Any) -> Response:
        campaign = visible_campaign(request, campaign_id)
        data = validated(s.CampaignUpdateInput, request.data)
        if "approval_policy" in data:
            services.campaign_set_approval_policy(
                campaign=campaign,
                by=request.user,
                policy=data["approval_policy"],
                via=ApprovalPolicyChange.Via.API,
                ip=client_ip(request),
            )
        if "approval_timeout" in data:
            services.campaign_set_approval_timeout(
                campaign=campaign,
                by=request.user,
                seconds=data["approval_timeout"],
                via=ApprovalPolicyChange.Via.API,
                ip=client_ip(request),
            )
        return Response(s.CampaignSerializer(campaign).data)


@extend_schema(tags=["campaigns"])
class CampaignStateView(ApiView):
    """The canonical dump of the game world: what a client shows, and what a revert restores
    exactly; `seq` is the last event it reflects. A player gets it without the creatures the
    fog hides from them (`campaigns.visibility`); the GM gets it whole."""

    @extend_schema(
        summary="The canonical state dump of the game world, with the event seq it reflects",
        responses={200: s.StateSerializer, **error_responses()},
    )
    def get(self, request: Request, campaign_id: Any) -> Response:
        campaign = visible_campaign(request, campaign_id)
        sight = sight_of(campaign=campaign, user=request.user)
        return Response(campaign_state_at_seq(campaign, sight=sight))


class OwnerCreateView(ApiView):
    """The owner adds one thing to the campaign's world, in one shape: the campaign and the row
    the path names (404 before the body is read), the body validated, one service given the
    caller (which checks that they own the campaign, recording a refusal), the new row rendered
    with 201. A subclass names the service, its input and output serializers, and overrides
    `parent` when the path names more than the campaign."""

    service: Callable[..., Any]  # `<entity>_<action>`
    input_serializer: type[serializers.Serializer]
    output_serializer: type[serializers.Serializer]

    def parent(self, campaign: Campaign, **path: Any) -> dict[str, Any]:
        """What else the path names, as the service's keyword arguments: nothing."""
        return {}

    def render(self, row: Any, data: dict[str, Any]) -> Any:
        return self.output_serializer(row).data

    def post(self, request: Request, campaign_id: Any, **path: Any) -> Response:
        campaign = visible_campaign(request, campaign_id)
        parent = self.parent(campaign, **path)
        data = validated(self.input_serializer, request.data)
        row = self.service(
            campaign=campaign, by=request.user, ip=client_ip(request), **parent, **data
        )
        return Response(self.render(row, data), status=status.HTTP_201_CREATED)


def owner_create_schema(summary: str | None, *errors: int) -> Callable[[type], type]:
    """The OpenAPI description of an `OwnerCreateView` subclass's POST."""
    return lambda view: with_post_schema(
        view,
        tag="campaigns",
        summary=summary,
        request=view.input_serializer,
        responses={201: view.output_serializer, **error_responses(403, *errors)},
    )


@owner_create_schema("Add a member (or change their can_revert_any grant)", 409)
class MemberAddView(OwnerCreateView):
    """The owner adds a member by username; `can_revert_any` grants (or withdraws) the
    right to revert anyone's turns, as a guardian object permission on the campaign."""

    service = staticmethod(services.membership_add)
    input_serializer = s.MemberAddInput
    output_serializer = s.MemberSerializer

    def render(self, row: Any, data: dict[str, Any]) -> Any:
        body = {
            "username": row.user.get_username(),
            "role": row.role,
            "can_revert_any": data["can_revert_any"],
        }
        return self.output_serializer(body).data


@extend_schema(tags=["campaigns"])
class CreatureCreateView(ApiView):
    """The owner creates any creature; a player may create only their own player
    character (`controlled_by` defaults to them)."""

    @extend_schema(
        summary="Create a creature (the owner; a player for their own PC)",
        request=s.CreatureCreateInput,
        responses={201: s.CreatureSerializer, **error_responses(403, 422)},
    )
    def post(self, request: Request, campaign_id: Any) -> Response:
        campaign = visible_campaign(request, campaign_id)
        data = validated(s.CreatureCreateInput, request.data)
        creature = services.creature_create(
            campaign=campaign, by=request.user, ip=client_ip(request), **data
        )
        return Response(s.CreatureSerializer(creature).data, status=status.HTTP_201_CREATED)


@owner_create_schema("Give a creature a resource (spell slots, ki, …)", 409, 422)
class ResourceCreateView(OwnerCreateView):
    """The owner gives a creature of this campaign a resource with a recharge rule."""

    service = staticmethod(services.resource_create)
    input_serializer = s.ResourceCreateInput
    output_serializer = s.ResourceSerializer

    def parent(self, campaign: Campaign, *, creature_id: Any) -> dict[str, Any]:
        return {"creature": creature_get(campaign=campaign, creature_id=creature_id)}


@owner_create_schema(None)
class ChapterCreateView(OwnerCreateView):
    """The owner appends a chapter; the first one becomes the current chapter."""

    service = staticmethod(services.chapter_create)
    input_serializer = s.ChapterCreateInput
    output_serializer = s.ChapterSerializer


@owner_create_schema(None)
class DungeonCreateView(OwnerCreateView):
    """The owner adds a dungeon that `activate_dungeon` can later switch to."""

    service = staticmethod(services.dungeon_create)
    input_serializer = s.DungeonCreateInput
    output_serializer = s.DungeonSerializer
