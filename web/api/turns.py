"""Stopping the GM on a turn, and running it again on an undone one (SPEC §5 Durable GM turns).

Who may: the turn's actor, or whoever may revert it (`audit.permissions.may_revert`). A
non-member gets 404 and a turn of another campaign is 404; a member without the right gets 403
and a SecurityEvent; a turn in the wrong state is 409 with a `detail` that says why.
"""

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from audit.permissions import recording_denials
from audit.selectors import turn_list
from core.api.base import ApiView, StrictSerializer, client_ip
from core.api.errors import error_responses
from gm.services import turn_cancel, turn_retry
from web.api.serializers import TurnSerializer
from web.api.views import validated, visible_campaign


class NoInput(StrictSerializer):
    """No fields: an empty JSON object (or no body)."""


def _turn_body(request: Request, campaign_id: Any, turn_id: int) -> dict[str, Any]:
    campaign = visible_campaign(request, campaign_id)
    return TurnSerializer(turn_list(campaign=campaign).get(pk=turn_id)).data


@extend_schema(tags=["turns"])
class TurnCancelView(ApiView):
    """A queued turn is cancelled at once (`status: cancelled`); a running one is asked to stop
    (`status: running`, `cancel_requested: true`) and ends `cancelled` at its next step, before
    its next round or tool call; its committed tool calls stay in the log, undoable."""

    @extend_schema(
        summary="Cancel the GM's answer to a queued or running turn",
        request=NoInput,
        responses={
            200: OpenApiResponse(TurnSerializer, "The turn, cancelled or asked to stop."),
            **error_responses(403, 409),
        },
    )
    def post(self, request: Request, campaign_id: Any, turn_id: int) -> Response:
        visible_campaign(request, campaign_id)
        validated(NoInput, request.data)
        with recording_denials(user=request.user, ip=client_ip(request)):
            turn = turn_cancel(campaign_id=campaign_id, turn_id=turn_id, user=request.user)
        return Response(_turn_body(request, campaign_id, turn.pk))


@extend_schema(tags=["turns"])
class TurnRetryView(ApiView):
    """Run the GM afresh on an undone GM turn: a new turn, queued, with the same player and
    message (`retry_of` is the undone turn). A turn is retried once."""

    @extend_schema(
        summary="Retry an undone GM turn: a new queued turn with the same player message",
        request=NoInput,
        responses={
            200: OpenApiResponse(TurnSerializer, "The new, queued turn."),
            **error_responses(403, 409),
        },
    )
    def post(self, request: Request, campaign_id: Any, turn_id: int) -> Response:
        visible_campaign(request, campaign_id)
        validated(NoInput, request.data)
        with recording_denials(user=request.user, ip=client_ip(request)):
            turn = turn_retry(campaign_id=campaign_id, turn_id=turn_id, user=request.user)
        return Response(_turn_body(request, campaign_id, turn.pk))
