"""Shapes of the invocation-log API. Keys are the contract of SPEC §6."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ai_tools.base import Tier
from audit.models import ToolInvocation
from audit.services.dispatch import TOOL_NAME_MAX
from campaigns.models import reached_choices
from core.api.base import StrictSerializer
from web.api.serializers import RevertibleSerializer, UsernameField

INVOCATION_STATUSES = reached_choices(ToolInvocation.Status.choices)

BIGINT_MAX = 2**63 - 1


class InvocationSerializer(RevertibleSerializer):
    user = UsernameField()
    requested_by = UsernameField(
        help_text="Who made the call when it was not the turn's actor (the owner posting into "
        "a player's turn); null when the actor or the GM on their turn made it."
    )
    status = serializers.ChoiceField(choices=INVOCATION_STATUSES, read_only=True)
    input = serializers.JSONField(read_only=True)
    result = serializers.JSONField(read_only=True, allow_null=True)

    class Meta:
        model = ToolInvocation
        fields = [
            "id",
            "sequence",
            "turn",
            "user",
            "requested_by",
            *ToolInvocation.CALL,
            "model",
            "source",
            "created_at",
            "committed_at",
            *ToolInvocation.REVERT_FIELDS,
        ]


class InvocationFilter(serializers.Serializer):
    """Query parameters of the log list; values are checked before they reach SQL."""

    status = serializers.ChoiceField(choices=INVOCATION_STATUSES, required=False)
    tier = serializers.ChoiceField(choices=Tier.choices, required=False)
    tool = serializers.CharField(max_length=64, required=False)
    turn = serializers.IntegerField(min_value=1, max_value=BIGINT_MAX, required=False)


class ToolCallInput(StrictSerializer):
    tool = serializers.CharField(
        max_length=TOOL_NAME_MAX,
        help_text="The write tool to run. A name the registry does not know is logged as a "
        "failed call and answered 422, like invalid input.",
    )
    input = serializers.JSONField(help_text="The tool's input, checked against its JSON schema.")
    model = serializers.CharField(
        max_length=100,
        required=False,
        default="",
        allow_blank=True,
        help_text="Who decided the call (provider + model version), stored on the log row.",
    )


class ToolCallResultSerializer(serializers.Serializer):
    invocation = serializers.UUIDField(help_text="The log row's id.")
    status = serializers.ChoiceField(choices=INVOCATION_STATUSES)
    result = serializers.JSONField(allow_null=True)


class ToolCallFailedSerializer(ToolCallResultSerializer):
    detail = serializers.CharField(help_text="Why the tool refused; the failed row keeps it too.")


class RevertInput(StrictSerializer):
    reason = serializers.CharField(max_length=1000, required=False, default="", allow_blank=True)
    cascade = serializers.BooleanField(
        default=False, help_text="Revert the later invocations in the way first, newest first."
    )


@extend_schema_field(OpenApiTypes.BOOL)
class QueryBooleanField(serializers.ChoiceField):
    """`true` or `false`, as OpenAPI serialises a boolean query parameter; anything else (an
    empty value, `maybe`) is a 400 rather than a guess."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=["true", "false"], **kwargs)

    def to_internal_value(self, data: Any) -> bool:
        return super().to_internal_value(data) == "true"


class PlanQuery(serializers.Serializer):
    cascade = QueryBooleanField(
        default=False, help_text="Plan the cascade: include the later invocations in the way."
    )


class RevertResultSerializer(serializers.Serializer):
    """`{reverted: true, details}` or `{reverted: false, skip_reason}`."""

    reverted = serializers.BooleanField()
    details = serializers.DictField(
        required=False, help_text="cascaded: invocation ids; state: the restored entities."
    )
    skip_reason = serializers.ChoiceField(
        choices=["already_reverted", "not_committed", "not_revertible"], required=False
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        if instance.reverted:
            return {"reverted": True, "details": instance.details}
        return {"reverted": False, "skip_reason": instance.skip_reason}


class SkippedSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    skip_reason = serializers.CharField()


class UndoResultSerializer(serializers.Serializer):
    reverted = serializers.ListField(child=serializers.UUIDField())
    skipped = SkippedSerializer(many=True)


class PlannedInvocationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    tool_name = serializers.CharField()
    summary = serializers.CharField()
    skip_reason = serializers.CharField(allow_null=True)


class DiffRowSerializer(serializers.Serializer):
    entity = serializers.CharField()
    id = serializers.CharField()
    field = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    now = serializers.JSONField(allow_null=True)


class PlanSerializer(serializers.Serializer):
    invocations = PlannedInvocationSerializer(many=True)
    conflicts = serializers.ListField(child=serializers.UUIDField())
    conflicting_invocations = PlannedInvocationSerializer(many=True)
    diff = DiffRowSerializer(many=True)


class AnalyticsQuery(serializers.Serializer):
    campaign = serializers.UUIDField(
        required=False,
        help_text="One campaign (its owner, or staff); default: every campaign "
        "the caller may read (staff: all; others: the campaigns they own).",
    )
    since = serializers.DateTimeField(
        required=False, help_text="Only calls made at or after this ISO 8601 date and time."
    )


class ToolStatsSerializer(serializers.Serializer):
    """One model version's use of one tool. `revert_rate` is reverted / (committed +
    reverted): the share of the calls that ran which were undone (0 when none ran)."""

    model = serializers.CharField()
    tool_name = serializers.CharField()
    calls = serializers.IntegerField()
    failed = serializers.IntegerField()
    reverted = serializers.IntegerField()
    revert_rate = serializers.FloatField()
    awaiting = serializers.IntegerField()
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    expired = serializers.IntegerField()
