"""The invocation log over HTTP: the log, revert, approval and their plans, and analytics. The
turn endpoints (tool calls, undo and its plan among them) are `web.api.turns`, on the revert
views' shapes defined here.

Revert, undo and plans are decided entirely by `audit.services` (404 for what the caller may not
see, 403 recorded as a security event, 409 with the conflicting ids); these views validate the
body, pass the caller's IP for the security log, and render the outcome.
"""

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from audit import services
from audit.analytics import analytics_scope, approval_fatigue, model_stats, tool_stats
from audit.selectors import calls_concealed, invocation_get, invocation_list, viewer_rights
from audit.services import approval
from core.api.base import (
    ApiListView,
    ApiView,
    client_ip,
    list_schema,
    with_post_schema,
)
from core.api.errors import error_responses
from web.api.audit import serializers as s
from web.shared import validated, visible_campaign


@list_schema("invocations", "The invocation log, newest first", parameters=[s.InvocationFilter])
class InvocationListView(ApiListView):
    """The invocation log of a campaign, newest first, filterable by status, tier, tool
    and turn, cursor-paginated so every page costs the same."""

    serializer_class = s.InvocationSerializer
    ordering = "-sequence"
    concealed: frozenset[Any] = frozenset()

    def get_queryset(self):
        self.campaign = visible_campaign(self.request, self.kwargs["campaign_id"])
        filters = s.InvocationFilter(data=self.request.query_params.dict())
        filters.is_valid(raise_exception=True)
        return invocation_list(campaign=self.campaign, **filters.validated_data)

    def paginate_queryset(self, queryset):
        """The page, and which of its rows the fog hides from this viewer."""
        page = super().paginate_queryset(queryset)
        rights = viewer_rights(campaign=self.campaign, user=self.request.user)
        self.concealed = calls_concealed(campaign=self.campaign, rights=rights, rows=page)
        return page

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "concealed": self.concealed}


@extend_schema(tags=["invocations"])
class InvocationDetailView(ApiView):
    """One log row. Rows are append-only: no endpoint edits or deletes them."""

    @extend_schema(responses={200: s.InvocationSerializer, **error_responses()})
    def get(self, request: Request, campaign_id: Any, invocation_id: Any) -> Response:
        campaign = visible_campaign(request, campaign_id)
        row = invocation_get(campaign=campaign, invocation_id=invocation_id)
        rights = viewer_rights(campaign=campaign, user=request.user)
        concealed = calls_concealed(campaign=campaign, rights=rights, rows=[row])
        return Response(s.InvocationSerializer(row, context={"concealed": concealed}).data)


class HeldCallAnswerView(ApiView):
    """An answer to a held call, in one shape: the campaign resolved (404 for a non-member),
    the body validated, the approval service deciding everything else (who may answer, whether
    the call still waits), its outcome rendered. A subclass names the service and its input."""

    service: Callable[..., Any]  # invocation_approve | invocation_reject
    input_serializer: type[serializers.Serializer]

    def post(self, request: Request, campaign_id: Any, invocation_id: Any) -> Response:
        visible_campaign(request, campaign_id)
        data = validated(self.input_serializer, request.data)
        outcome = self.service(
            campaign_id=campaign_id,
            invocation_id=invocation_id,
            user=request.user,
            ip=client_ip(request),
            **data,
        )
        return Response(s.ApprovalResultSerializer(outcome).data)


def held_call_answer_schema(summary: str) -> Callable[[type], type]:
    """The OpenAPI description of a `HeldCallAnswerView` subclass's POST."""
    return lambda view: with_post_schema(
        view,
        tag="invocations",
        summary=summary,
        request=view.input_serializer,
        responses={200: s.ApprovalResultSerializer, **error_responses(403, 409)},
    )


@held_call_answer_schema("Approve a tool call held for approval")
class InvocationApproveView(HeldCallAnswerView):
    """Let a held call run now, through the audited dispatch, against the world as it is (the
    owner, a co-GM holding the grant, or audit staff; not the turn's own player). A preview
    gone stale is a 409 carrying the fresh `preview`; the call keeps waiting."""

    service = staticmethod(approval.invocation_approve)
    input_serializer = s.ApproveInput


@held_call_answer_schema("Reject a tool call held for approval")
class InvocationRejectView(HeldCallAnswerView):
    """Refuse a held call (an approver), or withdraw it (the turn's player): nothing changes;
    the GM reads the refusal and the reason as the call's error."""

    service = staticmethod(approval.invocation_reject)
    input_serializer = s.RejectInput


@held_call_answer_schema("Object to a held critical call against your character")
class InvocationObjectView(HeldCallAnswerView):
    """The affected player's voice: the player of a character a held critical call would change
    objects, with their reason, and the call is rejected (nothing changes; the GM reads the
    objection). Anyone else is 403 (recorded); an answered call is 409."""

    service = staticmethod(approval.invocation_object)
    input_serializer = s.ObjectInput


class RevertActionView(ApiView):
    """Revert an invocation or undo a turn, in one shape: the campaign resolved (404 for a
    non-member), the body validated, the service deciding everything else, its outcome
    rendered. A subclass names the service and how its outcome reads."""

    service: Callable[..., Any]  # invocation_revert | turn_undo
    result_serializer: type[serializers.Serializer]

    def post(self, request: Request, campaign_id: Any, **target: Any) -> Response:
        visible_campaign(request, campaign_id)
        data = validated(s.RevertInput, request.data)
        outcome = self.service(
            campaign_id=campaign_id, user=request.user, ip=client_ip(request), **target, **data
        )
        return Response(self.result_serializer(outcome).data)


def revert_action_schema(tag: str, summary: str) -> Callable[[type], type]:
    """The OpenAPI description of a `RevertActionView` subclass's POST."""
    return lambda view: with_post_schema(
        view,
        tag=tag,
        summary=summary,
        request=s.RevertInput,
        responses={200: view.result_serializer, **error_responses(403, 409)},
    )


@revert_action_schema("invocations", "Revert one invocation (idempotent)")
class InvocationRevertView(RevertActionView):
    """Revert one invocation (same permission as undo). Idempotent; a later invocation
    that depends on it is a 409 listing the ids, unless `cascade` reverts them first."""

    service = staticmethod(services.invocation_revert)
    result_serializer = s.RevertResultSerializer


class RevertPlanView(ApiView):
    """What a revert would do, computed without changing anything: the invocations it would
    revert, the later ones in the way, and each changed field before → after → now. The
    confirm dialog shows it. A subclass names the plan service (`turn_undo_plan`,
    `invocation_revert_plan`)."""

    plan_of: Callable[..., Any]

    @extend_schema(
        summary="What the revert would do, computed without changing anything",
        parameters=[s.PlanQuery],
        responses={200: s.PlanSerializer, **error_responses(403)},
    )
    def get(self, request: Request, campaign_id: Any, **target: Any) -> Response:
        visible_campaign(request, campaign_id)
        query = s.PlanQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        plan = self.plan_of(
            campaign_id=campaign_id,
            user=request.user,
            ip=client_ip(request),
            cascade=query.validated_data["cascade"],
            **target,
        )
        return Response(s.PlanSerializer(plan).data)


@extend_schema(tags=["invocations"])
class InvocationRevertPlanView(RevertPlanView):
    """What reverting this invocation would do (`…/revert-plan/`)."""

    plan_of = staticmethod(services.invocation_revert_plan)


@extend_schema(tags=["analytics"])
class ToolAnalyticsView(ApiView):
    """Per model version and tool: calls, failed, reverted, revert rate, and the approval
    outcomes. Staff holding the audit permission read every campaign; anyone else the campaigns
    they own. Naming a campaign one is a member of but does not own is 403 (recorded); one
    the caller cannot see is 404."""

    @extend_schema(
        summary="Tool-call outcomes per model version and tool",
        parameters=[s.AnalyticsQuery],
        responses={
            200: PolymorphicProxySerializer(
                component_name="ToolAnalytics",
                serializers=[s.ToolStatsSerializer, s.ModelStatsSerializer],
                resource_type_field_name=None,
                many=True,
            ),
            **error_responses(403),
        },
    )
    def get(self, request: Request) -> Response:
        query = s.AnalyticsQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        campaign_ids = analytics_scope(
            user=request.user,
            campaign_id=query.validated_data.get("campaign"),
            ip=client_ip(request),
        )
        since = query.validated_data.get("since")
        if query.validated_data["by"] == "model":
            models = model_stats(campaign_ids=campaign_ids, since=since)
            return Response(s.ModelStatsSerializer(models, many=True).data)
        rows = tool_stats(campaign_ids=campaign_ids, since=since)
        return Response(s.ToolStatsSerializer(rows, many=True).data)


@extend_schema(tags=["analytics"])
class ApprovalAnalyticsView(ApiView):
    """The approval-fatigue measure (docs/architecture.md#approval-fatigue): how many prompts
    the policy asked per GM turn, and per approver the approve rate and the time to decide.
    The same scope and refusals as `/api/analytics/tools/`."""

    @extend_schema(
        summary="Approval prompts per turn, and each approver's approve rate and time to decide",
        parameters=[s.AnalyticsQuery],
        responses={200: s.ApprovalFatigueSerializer, **error_responses(403)},
    )
    def get(self, request: Request) -> Response:
        query = s.AnalyticsQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        campaign_ids = analytics_scope(
            user=request.user,
            campaign_id=query.validated_data.get("campaign"),
            ip=client_ip(request),
        )
        figures = approval_fatigue(
            campaign_ids=campaign_ids, since=query.validated_data.get("since")
        )
        return Response(s.ApprovalFatigueSerializer(figures).data)
