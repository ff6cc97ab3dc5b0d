"""A person's own token move from the map (docs/api.md#moving-a-token): the `move_token` tool
through the audited dispatch with the origin `user`, so the move is in the log, undoable like the
GM's calls (`…/invocations/{iid}/revert/`), and its `state_changed` event carries the source `user`.

Who may: a player their own PC, the owner and the co-GMs any token, as the service decides
(`audit.services.hand.token_move`). A non-member and a creature of another campaign are 404; a
member without the right is 403 and a SecurityEvent. The move joins no turn: it is nobody's
message to the GM.
"""

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from ai_tools.tools.schema import COORD
from audit.models import ToolInvocation
from audit.services.hand import token_move
from campaigns.selectors import creature_get
from core.api.base import ApiView, StrictSerializer, client_ip
from core.api.errors import error_responses
from web.api.audit import serializers as s
from web.shared import validated, visible_campaign


def _cell(axis: str) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=COORD["minimum"],
        max_value=COORD["maximum"],
        help_text=f"The map cell's {axis} (the `move_token` tool's bounds).",
    )


class TokenMoveInput(StrictSerializer):
    x = _cell("column")
    y = _cell("row")


@extend_schema(tags=["map"])
class TokenMoveView(ApiView):
    """Move a token on the map: a player their own PC, the owner or a co-GM any token. Logged
    with source `user` and undoable through the invocation's revert."""

    @extend_schema(
        summary="Move a creature's token (move_token, source user); undo with its revert",
        request=TokenMoveInput,
        responses={
            201: OpenApiResponse(s.ToolCallResultSerializer, "Moved, logged, undoable."),
            422: OpenApiResponse(s.ToolCallFailedSerializer, "The tool refused: a failed row."),
            **error_responses(403, 503),
        },
    )
    def post(self, request: Request, campaign_id: Any, creature_id: int) -> Response:
        campaign = visible_campaign(request, campaign_id)
        creature = creature_get(campaign=campaign, creature_id=creature_id)
        data = validated(TokenMoveInput, request.data)
        row = token_move(
            campaign=campaign,
            creature=creature,
            by=request.user,
            ip=client_ip(request),
            **data,
        )
        body = {"invocation": row.pk, "status": row.status, "result": row.result}
        if row.status == ToolInvocation.Status.FAILED:
            failed = s.ToolCallFailedSerializer({**body, "detail": row.error})
            return Response(failed.data, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        return Response(s.ToolCallResultSerializer(body).data, status=status.HTTP_201_CREATED)
