"""Every endpoint of a turn: the turns of a campaign and a new one, an agent's tool call into
one, stopping the GM on it and running it again on an undone one, and its undo with the plan
of it (docs/architecture.md#durable-gm-turns, #revert-and-undo).

A non-member gets 404 and a turn of another campaign is 404; a member without the right gets 403
and a SecurityEvent (the services decide, and record it); a turn in the wrong state is 409 with a
`detail` that says why.
"""

from collections.abc import Callable
from typing import Any

from django.db.models import Prefetch, prefetch_related_objects
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from audit import services as audit_services
from audit.models import ToolInvocation
from audit.selectors import turn_list, turn_messages
from audit.services.agent import agent_call
from audit.services.redo import turn_redo
from campaigns.models import Turn
from campaigns.selectors import turn_get
from core.api.base import (
    ApiListView,
    ApiView,
    StrictSerializer,
    client_ip,
    list_schema,
    with_post_schema,
)
from core.api.errors import ConflictSerializer, RefusedSerializer, error_responses
from gm.services import turn_cancel, turn_retry, turn_submit
from web.api.audit import serializers as audit_s
from web.api.audit.views import RevertActionView, RevertPlanView, revert_action_schema
from web.api.serializers import TurnCreateInput, TurnSerializer
from web.shared import validated, visible_campaign


class NoInput(StrictSerializer):
    """No fields: an empty JSON object (or no body)."""


def _turn_data(campaign: Any, turn_id: int) -> dict[str, Any]:
    """A turn as the turn list reads it (its messages and calls with it)."""
    return TurnSerializer(turn_list(campaign=campaign).get(pk=turn_id)).data


def _created_turn_data(turn: Turn) -> dict[str, Any]:
    """A turn just created, as the turn list reads it, from the rows just written: the turn
    row in hand, no call made in it yet, and its opening message (written by the service,
    which hands back the turn alone: one read, as `turn_list` prefetches it)."""
    prefetch_related_objects(
        [turn],
        Prefetch("messages", queryset=turn_messages()),
        Prefetch("invocations", queryset=ToolInvocation.objects.none()),
    )
    return TurnSerializer(turn).data


class TurnGMView(ApiView):
    """Stop or rerun the GM on a turn, in one shape: the campaign resolved (404 for a
    non-member), an empty body, the service deciding everything else (who may, and whether the
    turn's state allows it), the turn it leaves rendered. A subclass names the service."""

    service: Callable[..., Any]  # turn_cancel | turn_retry

    def post(self, request: Request, campaign_id: Any, turn_id: int) -> Response:
        campaign = visible_campaign(request, campaign_id)
        validated(NoInput, request.data)
        turn = self.service(
            campaign_id=campaign_id, turn_id=turn_id, user=request.user, ip=client_ip(request)
        )
        return Response(_turn_data(campaign, turn.pk))


def turn_gm_schema(summary: str, answer: str) -> Callable[[type], type]:
    """The OpenAPI description of a `TurnGMView` subclass's POST."""
    return lambda view: with_post_schema(
        view,
        tag="turns",
        summary=summary,
        request=NoInput,
        responses={200: OpenApiResponse(TurnSerializer, answer), **error_responses(403, 409)},
    )


@turn_gm_schema(
    "Cancel the GM's answer to a queued or running turn", "The turn, cancelled or asked to stop."
)
class TurnCancelView(TurnGMView):
    """A queued turn is cancelled at once (`status: cancelled`); a running one is asked to stop
    (`status: running`, `cancel_requested: true`) and ends `cancelled` within about a second:
    the model's stream is hung up mid-sentence, what it said is kept, none of the unfinished
    message's tool calls runs, and its committed tool calls stay in the log, undoable."""

    service = staticmethod(turn_cancel)


@turn_gm_schema(
    "Retry an undone GM turn: a new queued turn with the same player message",
    "The new, queued turn.",
)
class TurnRetryView(TurnGMView):
    """Run the GM afresh on an undone GM turn: a new turn, queued, with the same player and
    message (`retry_of` is the undone turn). A turn is retried once."""

    service = staticmethod(turn_retry)


class ChangeSerializer(serializers.Serializer):
    entity = serializers.CharField()
    id = serializers.CharField()
    field = serializers.CharField()
    was = serializers.JSONField(
        allow_null=True, help_text="As the turn found it (its undo put it back)."
    )
    now = serializers.JSONField(allow_null=True)


class DivergedSerializer(ConflictSerializer):
    changes = ChangeSerializer(
        many=True, required=False, help_text="What changed since the turn was undone."
    )


@extend_schema_view(
    post=extend_schema(
        tags=["turns"],
        summary="Redo an undone turn exactly: the same calls, inputs and dice, as a new turn",
        request=NoInput,
        responses={
            200: OpenApiResponse(TurnSerializer, "The new turn, which puts the undone one back."),
            **error_responses(403),
            409: DivergedSerializer,
        },
    )
)
class TurnRedoView(TurnGMView):
    """Put an undone turn back as it was (`redo_of` is the undone turn): its calls run again
    through the audited dispatch with the same inputs, as new log rows, with its messages and
    the GM's dice as they were; undoable like any turn. A 409 when what it wrote changed since
    it was undone (`changes`: `{entity, id, field, was, now}`), or once redone or retried."""

    service = staticmethod(turn_redo)


@list_schema("turns", "Turns, newest first, with their messages and invocation summaries")
class TurnListView(ApiListView):
    """Turns, newest first, each with its chat messages and a summary of its tool calls;
    posting a message opens a new turn for the caller, queued for the configured GM, which a
    worker answers (the response does not wait for it)."""

    serializer_class = TurnSerializer
    ordering = "-created_at"
    page_size = 20

    def get_queryset(self):
        return turn_list(campaign=visible_campaign(self.request, self.kwargs["campaign_id"]))

    @extend_schema(
        summary="Post a player's message as a new turn, queued for the GM unless run_gm is false",
        request=TurnCreateInput,
        responses={201: TurnSerializer, **error_responses(403)},
    )
    def post(self, request: Request, campaign_id: Any) -> Response:
        campaign = visible_campaign(request, campaign_id)
        data = validated(TurnCreateInput, request.data)
        turn = turn_submit(
            campaign=campaign,
            actor=request.user,
            message=data["message"],
            run_gm=data["run_gm"],
            ip=client_ip(request),
        )
        return Response(_created_turn_data(turn), status=status.HTTP_201_CREATED)


@extend_schema(tags=["turns"])
class ToolCallView(ApiView):
    """An external agent's tool call, run as the turn's actor through the audited dispatch:
    logged before it mutates, undoable afterwards. Only the turn's actor or the owner may post,
    and the call has the caller's powers (least privilege: a player's reach their own character
    only; docs/tools.md#who-may-call-what)."""

    @extend_schema(
        summary="Run a write tool in this turn through the audited dispatch",
        request=audit_s.ToolCallInput,
        responses={
            201: OpenApiResponse(audit_s.ToolCallResultSerializer, "Committed."),
            202: OpenApiResponse(
                audit_s.ToolCallHeldSerializer,
                "Held for approval (the campaign's policy): nothing changed yet; `preview` says "
                "what it would change. Approve or reject it at …/invocations/{id}/approve/.",
            ),
            422: OpenApiResponse(
                audit_s.ToolCallFailedSerializer,
                "Invalid input or a tool error: a failed row was logged, nothing changed.",
            ),
            403: OpenApiResponse(
                RefusedSerializer,
                "Not the turn's actor or the owner, or least privilege refused the call (then "
                "`invocation` is its failed log row); a security event is recorded.",
            ),
            **error_responses(409, 503),
        },
    )
    def post(self, request: Request, campaign_id: Any, turn_id: int) -> Response:
        # A stranger's campaign and another campaign's turn are 404 before the body is read;
        # the service resolves both again, for every surface, and decides the rest.
        turn_get(campaign=visible_campaign(request, campaign_id), turn_id=turn_id)
        data = validated(audit_s.ToolCallInput, request.data)
        row = agent_call(
            campaign_id=campaign_id,
            turn_id=turn_id,
            by=request.user,
            tool_name=data["tool"],
            input=data["input"],
            model=data["model"],
            ip=client_ip(request),
        )
        body = {"invocation": row.pk, "status": row.status, "result": row.result}
        if row.status == ToolInvocation.Status.FAILED:
            failed = audit_s.ToolCallFailedSerializer({**body, "detail": row.error})
            return Response(failed.data, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        if row.status == ToolInvocation.Status.AWAITING_APPROVAL:
            held = {**body, "preview": audit_s.public_preview(row.preview)}
            return Response(
                audit_s.ToolCallHeldSerializer(held).data, status=status.HTTP_202_ACCEPTED
            )
        return Response(audit_s.ToolCallResultSerializer(body).data, status=status.HTTP_201_CREATED)


@revert_action_schema(
    "turns", "Undo a turn: revert its committed invocations newest first, atomically"
)
class TurnUndoView(RevertActionView):
    """Undo a whole turn (the original actor, the owner, a co-GM holding the grant, or
    staff). Idempotent: a second undo reports every invocation as `already_reverted`."""

    service = staticmethod(audit_services.turn_undo)
    result_serializer = audit_s.UndoResultSerializer


@extend_schema(tags=["turns"])
class TurnUndoPlanView(RevertPlanView):
    """What undoing this turn would do (`…/undo-plan/`)."""

    plan_of = staticmethod(audit_services.turn_undo_plan)


class RewindInput(StrictSerializer):
    reason = serializers.CharField(max_length=1000, required=False, default="", allow_blank=True)


class RewoundTurnSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    actor = serializers.CharField()
    status = serializers.CharField()


class RewindPlanSerializer(serializers.Serializer):
    turns = RewoundTurnSerializer(many=True)
    invocations = audit_s.PlannedInvocationSerializer(many=True)
    blocked = audit_s.PlannedInvocationSerializer(many=True)
    diff = audit_s.DiffRowSerializer(many=True)


class RewindResultSerializer(serializers.Serializer):
    turns = serializers.ListField(child=serializers.IntegerField())
    reverted = serializers.ListField(child=serializers.UUIDField())


@extend_schema(tags=["turns"])
class TurnRewindPlanView(ApiView):
    """What rewinding to before this turn would do, computed without changing anything: the
    turns it undoes and every call it reverts, newest first (`blocked`: calls that cannot be
    reverted, which the rewind refuses with 409), and each field before → after → now. A caller
    who may not revert all of it gets the rewind's 403 (recorded). POST answers as GET."""

    def _plan(self, request: Request, campaign_id: Any, turn_id: int) -> Response:
        visible_campaign(request, campaign_id)
        plan = audit_services.turn_rewind_plan(
            campaign_id=campaign_id, turn_id=turn_id, user=request.user, ip=client_ip(request)
        )
        return Response(RewindPlanSerializer(plan).data)

    @extend_schema(
        summary="What a rewind to before this turn would do",
        responses={200: RewindPlanSerializer, **error_responses(403)},
    )
    def get(self, request: Request, campaign_id: Any, turn_id: int) -> Response:
        return self._plan(request, campaign_id, turn_id)

    @extend_schema(
        summary="What a rewind to before this turn would do (the same answer as GET)",
        request=NoInput,
        responses={200: RewindPlanSerializer, **error_responses(403)},
    )
    def post(self, request: Request, campaign_id: Any, turn_id: int) -> Response:
        validated(NoInput, request.data)
        return self._plan(request, campaign_id, turn_id)


@extend_schema(tags=["turns"])
class TurnRewindView(ApiView):
    """Rewind the table to before this turn: it and every later turn undone, their calls and
    the table's own hand since reverted newest first, in one transaction or not at all; 403
    naming what the caller may not revert (nothing changes), 409 for a call that cannot be
    reverted."""

    @extend_schema(
        summary="Rewind to before this turn: undo it and every later turn, newest first",
        request=RewindInput,
        responses={200: RewindResultSerializer, **error_responses(403, 409)},
    )
    def post(self, request: Request, campaign_id: Any, turn_id: int) -> Response:
        visible_campaign(request, campaign_id)
        data = validated(RewindInput, request.data)
        outcome = audit_services.turn_rewind(
            campaign_id=campaign_id,
            turn_id=turn_id,
            user=request.user,
            ip=client_ip(request),
            **data,
        )
        return Response(RewindResultSerializer(outcome).data)
