"""Shapes of the invocation-log API. Keys are the contract of docs/api.md."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ai_tools.base import Tier
from audit.models import ApprovalAnswer, SkipReason, ToolInvocation
from audit.services.approval import approval_answer
from audit.services.dispatch import TOOL_NAME_MAX, approval_deadline
from core.api.base import StrictSerializer
from web.api.serializers import RevertibleSerializer, UsernameField

INVOCATION_STATUSES = ToolInvocation.Status.choices

BIGINT_MAX = 2**63 - 1


# Who answered a held call, how, when and why (`audit.services.approval.approval_answer`).
APPROVAL_ANSWER_SCHEMA = {
    "type": "object",
    "nullable": True,
    "properties": {
        "status": {"type": "string", "enum": [a.value for a in ApprovalAnswer]},
        "by": {"type": "string", "nullable": True, "description": "Null when it expired."},
        "at": {"type": "string", "format": "date-time"},
        "reason": {"type": "string"},
        "ran_as": {
            "type": "string",
            "format": "uuid",
            "nullable": True,
            "description": "Approved: the log row the call ran as, at the log's tip.",
        },
        "ran_status": {"type": "string", "nullable": True},
    },
}


class PreviewRowSerializer(serializers.Serializer):
    entity = serializers.CharField()
    id = serializers.CharField()
    field = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)


class PreviewSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="Why the call waits for a person.")
    diff = PreviewRowSerializer(many=True, help_text="What it would change: before → after.")


def _nullable(serializer: type[serializers.Serializer]) -> dict[str, Any]:
    """The schema of a method field answering with `serializer`'s shape or null."""
    name = serializer.__name__.removesuffix("Serializer")
    return {"allOf": [{"$ref": f"#/components/schemas/{name}"}], "nullable": True}


class InvocationSerializer(RevertibleSerializer):
    user = UsernameField()
    requested_by = UsernameField(
        help_text="Who made the call when it was not the turn's actor (the owner posting into "
        "a player's turn); null when the actor or the GM on their turn made it."
    )
    status = serializers.ChoiceField(choices=INVOCATION_STATUSES, read_only=True)
    input = serializers.JSONField(read_only=True)
    result = serializers.JSONField(read_only=True, allow_null=True)
    # Human in the loop: a held call's preview, when it expires while it waits, who answered
    # it, how and when; for a call that ran once approved, the held row it ran for.
    preview = serializers.SerializerMethodField()
    expires_at = serializers.SerializerMethodField()
    approval = serializers.SerializerMethodField()
    approval_of = serializers.UUIDField(source="approval_of_id", read_only=True, allow_null=True)
    concealed = serializers.SerializerMethodField(
        help_text="True when the call tells of a creature the fog hides from the reader (a "
        "player): its input reads {}, its result and preview null, its error empty (docs/api.md)."
    )

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
            "preview",
            "expires_at",
            "approval",
            "approval_of",
            "concealed",
        ]

    def _concealed(self, row: ToolInvocation) -> bool:
        return row.pk in self.context.get("concealed", ())

    def get_concealed(self, row: ToolInvocation) -> bool:
        return self._concealed(row)

    def to_representation(self, row: ToolInvocation) -> dict[str, Any]:
        data = super().to_representation(row)
        if self._concealed(row):  # the fog hides what it did from this reader: that it ran stays
            data.update(input={}, result=None, error="", preview=None)
        return data

    @extend_schema_field(_nullable(PreviewSerializer))
    def get_preview(self, row: ToolInvocation) -> dict[str, Any] | None:
        return public_preview(row.preview)

    @extend_schema_field({"type": "string", "format": "date-time", "nullable": True})
    def get_expires_at(self, row: ToolInvocation) -> str | None:
        if row.status != ToolInvocation.Status.AWAITING_APPROVAL:
            return None
        return approval_deadline(row).isoformat()

    @extend_schema_field(APPROVAL_ANSWER_SCHEMA)
    def get_approval(self, row: ToolInvocation) -> dict[str, Any] | None:
        """From the chained transition: a query for a call that was held, none otherwise."""
        return approval_answer(row) if row.preview is not None else None


def public_preview(preview: Any) -> dict[str, Any] | None:
    """A stored preview as clients see it: why, and before → after (the full pre-state it also
    keeps is the server's, to tell a stale preview)."""
    if not isinstance(preview, dict):
        return None
    return {"reason": preview.get("reason", ""), "diff": preview.get("diff", [])}


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


class ToolCallHeldSerializer(serializers.Serializer):
    invocation = serializers.UUIDField(help_text="The held row's id: approve or reject it.")
    status = serializers.ChoiceField(choices=[ToolInvocation.Status.AWAITING_APPROVAL])
    preview = PreviewSerializer()


class ApproveInput(StrictSerializer):
    """Nothing to send: the call runs as it was asked, against the world as it is."""


class RejectInput(StrictSerializer):
    reason = serializers.CharField(max_length=1000, required=False, default="", allow_blank=True)


class ObjectInput(StrictSerializer):
    reason = serializers.CharField(
        max_length=1000, help_text="Why the player objects: shown to the table and the GM."
    )


class ApprovalResultSerializer(serializers.Serializer):
    """Approved: `status` is how the call ran (`committed`, or `failed` if its tool refused
    the world as it now is), with its `result` or `detail`; rejected: `rejected`."""

    invocation = serializers.UUIDField(help_text="The held row.")
    status = serializers.ChoiceField(
        choices=[
            ToolInvocation.Status.COMMITTED,
            ToolInvocation.Status.FAILED,
            ToolInvocation.Status.REJECTED,
        ]
    )
    ran_as = serializers.UUIDField(allow_null=True, help_text="The row the approved call ran as.")
    result = serializers.JSONField(allow_null=True, required=False)
    detail = serializers.CharField(required=False)

    def to_representation(self, outcome: Any) -> dict[str, Any]:
        ran = outcome.ran
        body = {
            "invocation": str(outcome.invocation.pk),
            "status": ran.status if ran is not None else outcome.status,
            "ran_as": str(ran.pk) if ran is not None else None,
        }
        if ran is not None and ran.status == ToolInvocation.Status.COMMITTED:
            body["result"] = ran.result
        elif ran is not None:
            body["detail"] = ran.error
        return body


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
    skip_reason = serializers.ChoiceField(choices=list(SkipReason), required=False)

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


class DiffRowSerializer(PreviewRowSerializer):
    now = serializers.JSONField(allow_null=True)  # a preview's row, and what the field holds now


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
    by = serializers.ChoiceField(
        choices=["tool", "model"],
        required=False,
        default="tool",
        help_text="`tool` (the default): a row per model version and tool. `model`: a row per "
        "model, side by side: undo rate per GM turn, failed-input rate, approval outcomes, "
        "median latency to the first word and per turn, tokens.",
    )


class ModelStatsSerializer(serializers.Serializer):
    """One model, for comparing models on the same table (`?by=model`). `undo_rate` is undone
    GM turns / GM turns it answered; `failed_input_rate` is calls whose input the tool refused /
    calls; latencies are medians in milliseconds (null without turns that spoke); tokens are
    sums where the server reported them (null where none did)."""

    model = serializers.CharField()
    turns = serializers.IntegerField()
    undone_turns = serializers.IntegerField()
    undo_rate = serializers.FloatField()
    calls = serializers.IntegerField()
    failed = serializers.IntegerField()
    failed_input = serializers.IntegerField()
    failed_input_rate = serializers.FloatField()
    reverted = serializers.IntegerField()
    revert_rate = serializers.FloatField()
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    expired = serializers.IntegerField()
    median_first_word_ms = serializers.IntegerField(allow_null=True)
    median_turn_ms = serializers.IntegerField(allow_null=True)
    tokens_in = serializers.IntegerField(allow_null=True)
    tokens_out = serializers.IntegerField(allow_null=True)


class ApproverStatsSerializer(serializers.Serializer):
    """How one person answered held calls: `approve_rate` is approved / answered; the times
    run from the call being held to the answer."""

    approver = serializers.CharField()
    answered = serializers.IntegerField()
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    approve_rate = serializers.FloatField()
    median_seconds = serializers.FloatField()
    mean_seconds = serializers.FloatField()


class ApprovalFatigueSerializer(serializers.Serializer):
    """The approval-fatigue measure: the prompts the policy asked (calls held, answered or
    waiting), per GM turn, and each approver's answers."""

    prompts = serializers.IntegerField()
    awaiting = serializers.IntegerField()
    expired = serializers.IntegerField()
    turns = serializers.IntegerField(help_text="Turns the GM was asked to answer.")
    prompts_per_turn = serializers.FloatField()
    approvers = ApproverStatsSerializer(many=True)


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
