"""Shapes of the campaign API: `*Input` serializers validate request bodies (unknown fields are
refused), the others render responses. Bounds mirror the tool schemas, so nothing the API
accepts can later overflow a column or a tool."""

from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ai_tools.tools.schema import COORD, HP
from audit.selectors import WAITING_TURNS, held_call_waiting, turn_waiting
from campaigns.models import (
    Campaign,
    Chapter,
    ChatMessage,
    Creature,
    Dungeon,
    Membership,
    Resource,
    Turn,
)
from campaigns.selectors import campaign_members
from campaigns.services import APPROVAL_TIMEOUT_MAX, APPROVAL_TIMEOUT_MIN
from core.api.base import StrictSerializer

User = get_user_model()
TURN_STATUSES = Turn.Status.choices
MAX_HP, MAX_COORD = HP["maximum"], COORD["maximum"]
MESSAGE_MAX = 4000


def _username(user: Any) -> str | None:
    return user.get_username() if user is not None else None


@extend_schema_field({"type": "string", "nullable": True})
class UsernameField(serializers.Field):
    """A user rendered as their username (clients know people by name, not by id)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, value: Any) -> str | None:
        return _username(value)


# Inputs


POLICY_HELP = (
    "Which tool calls wait for a human: none; critical; critical_and_high; adaptive (critical, "
    "and any model and tool whose recent calls keep being undone); watchful (the default: "
    "end_adventure always, a critical call on a player's character, and what adaptive holds)."
)


class CampaignCreateInput(StrictSerializer):
    name = serializers.CharField(max_length=200)
    approval_policy = serializers.ChoiceField(
        choices=Campaign.ApprovalPolicy.choices, required=False, help_text=POLICY_HELP
    )


class CampaignUpdateInput(StrictSerializer):
    approval_policy = serializers.ChoiceField(
        choices=Campaign.ApprovalPolicy.choices, required=False, help_text=POLICY_HELP
    )
    approval_timeout = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=APPROVAL_TIMEOUT_MIN,
        max_value=APPROVAL_TIMEOUT_MAX,
        help_text="Seconds a held call waits for an answer before it expires (60 to 604800); "
        "null: the site's default (APPROVAL_TIMEOUT).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Send approval_policy, approval_timeout or both.")
        return attrs


class MemberAddInput(StrictSerializer):
    username = serializers.CharField(max_length=150)
    can_revert_any = serializers.BooleanField(default=False)


class CreatureCreateInput(StrictSerializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=Creature.Kind.choices)
    hp = serializers.IntegerField(min_value=0, max_value=MAX_HP)
    max_hp = serializers.IntegerField(min_value=1, max_value=MAX_HP)
    controlled_by = serializers.SlugRelatedField(
        slug_field="username",
        queryset=User.objects.all(),
        required=False,
        allow_null=True,
        help_text="Username of the player controlling this PC (a player creating their own PC "
        "may leave it out).",
    )
    x = serializers.IntegerField(
        min_value=0,
        max_value=MAX_COORD,
        required=False,
        help_text="Left out (with y): the map's free cell nearest its top-left corner.",
    )
    y = serializers.IntegerField(min_value=0, max_value=MAX_COORD, required=False)


class ResourceCreateInput(StrictSerializer):
    name = serializers.CharField(max_length=100)
    current = serializers.IntegerField(min_value=0, max_value=MAX_HP)
    maximum = serializers.IntegerField(min_value=0, max_value=MAX_HP)
    recharge = serializers.ChoiceField(
        choices=Resource.Recharge.choices, default=Resource.Recharge.NONE
    )


class ChapterCreateInput(StrictSerializer):
    title = serializers.CharField(max_length=200)


class DungeonCreateInput(StrictSerializer):
    name = serializers.CharField(max_length=200)


class TurnCreateInput(StrictSerializer):
    message = serializers.CharField(max_length=MESSAGE_MAX)
    run_gm = serializers.BooleanField(
        default=True,
        help_text="Queue the turn for the configured GM (GM_PROVIDER), which a worker runs; "
        "false records the player's message only (the turn stays open).",
    )


# Outputs


class CampaignSummarySerializer(serializers.ModelSerializer):
    owner = UsernameField()
    approval_timeout = serializers.SerializerMethodField(
        help_text="Seconds a held call waits for an answer before it expires."
    )

    class Meta:
        model = Campaign
        fields = ["id", "name", "owner", "status", "approval_policy", "approval_timeout"]

    def get_approval_timeout(self, campaign: Campaign) -> int:
        return round(campaign.approval_timeout)


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    can_revert_any = serializers.BooleanField()


class CampaignSerializer(CampaignSummarySerializer):
    members = serializers.SerializerMethodField()

    class Meta(CampaignSummarySerializer.Meta):
        fields = [*CampaignSummarySerializer.Meta.fields, "members"]

    @extend_schema_field(MemberSerializer(many=True))
    def get_members(self, campaign: Campaign) -> list[dict[str, Any]]:
        return campaign_members(campaign=campaign)


class CreatureSerializer(serializers.ModelSerializer):
    controlled_by = UsernameField()
    conditions = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Creature
        fields = ["id", *Creature.SHOWN]


class ResourceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Resource
        fields = ["id", "creature", "name", "current", "maximum", "recharge"]


class ChapterSerializer(serializers.ModelSerializer):
    class Meta:
        model = Chapter
        fields = ["id", "title", "position"]


class DungeonSerializer(serializers.ModelSerializer):
    class Meta:
        model = Dungeon
        fields = ["id", "name"]


class MessageSerializer(serializers.ModelSerializer):
    author = UsernameField()

    class Meta:
        model = ChatMessage
        fields = ["id", "role", "source", "author", "content", "reverted", "created_at"]


class InvocationSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    sequence = serializers.IntegerField()
    tool_name = serializers.CharField()
    tool_tier = serializers.CharField()
    status = serializers.CharField()


# A turn or a log row: who undid it is named like every person, by username. (A comment, not a
# docstring: the schema would give it as the description of every subclass.)
class RevertibleSerializer(serializers.ModelSerializer):
    reverted_by = UsernameField()


class WaitingSerializer(serializers.Serializer):
    """What a turn the GM has yet to answer waits for while a call is held: the approval of
    the campaign's oldest held call, on whom, since when."""

    for_ = serializers.ChoiceField(
        choices=["approval"], help_text="What it waits for: a held call's answer."
    )
    invocation = serializers.UUIDField(help_text="The held call.")
    tool_name = serializers.CharField()
    turn = serializers.IntegerField(help_text="The paused turn the call was made in.")
    on = serializers.ListField(
        child=serializers.CharField(), help_text="Who may approve it (usernames)."
    )
    since = serializers.DateTimeField(help_text="When the call was held.")
    expires_at = serializers.DateTimeField(help_text="When it expires unless answered.")

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        fields["for"] = fields.pop("for_")  # a Python keyword, a plain JSON name
        return fields


class TurnSerializer(RevertibleSerializer):
    actor = UsernameField()
    messages = MessageSerializer(many=True, read_only=True)
    invocations = InvocationSummarySerializer(many=True, read_only=True)
    status = serializers.ChoiceField(choices=TURN_STATUSES, read_only=True)
    attempts = serializers.IntegerField(
        read_only=True, help_text="How many times a worker claimed the turn (above 1: resumed)."
    )
    cancel_requested = serializers.SerializerMethodField()
    retry_of = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True, help_text="The undone turn this one runs the GM again on."
    )
    redo_of = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True, help_text="The undone turn this one puts back exactly."
    )
    waiting = serializers.SerializerMethodField(
        help_text="While a call is held: what this turn (queued behind it, or paused on it) "
        "waits for, on whom, since when; else null."
    )

    class Meta:
        model = Turn
        fields = [
            "id",
            "actor",
            "status",
            "attempts",
            "cancel_requested",
            "retry_of",
            "redo_of",
            "waiting",
            "created_at",
            *Turn.REVERT_FIELDS,
            "messages",
            "invocations",
        ]

    def get_cancel_requested(self, turn: Turn) -> bool:
        """Someone asked the GM to stop: a running turn stops at its next step."""
        return turn.cancel_requested_at is not None

    @extend_schema_field(WaitingSerializer(allow_null=True))
    def get_waiting(self, turn: Turn) -> dict[str, Any] | None:
        """Read once per response (the context is shared by a page's turns), and only when a
        turn of the page is one the GM has yet to answer."""
        if turn.status not in WAITING_TURNS or turn.reverted_at is not None:
            return None
        cache = self.context.setdefault("held_call_waiting", {})
        if turn.campaign_id not in cache:
            cache[turn.campaign_id] = held_call_waiting(campaign=turn.campaign)
        waiting = turn_waiting(turn, cache[turn.campaign_id])
        return WaitingSerializer(waiting).data if waiting is not None else None


# The canonical dump's tables after `campaign`, each a list of rows.
STATE_TABLES = (
    "members",
    "creatures",
    "resources",
    "resource_events",
    "items",
    "chapters",
    "dungeons",
    "encounters",
    "fog",
    "memories",
    "achievements",
    "episodes",
)
StateSerializer = type(
    "StateSerializer",
    (serializers.Serializer,),
    {
        "__module__": __name__,
        "__doc__": "The canonical dump of `campaigns.selectors.campaign_state` "
        "(docs/architecture.md#the-game-world), with `seq`: the campaign's last realtime event "
        "that the dump reflects (docs/api.md#the-live-feed-websocket).",
        "seq": serializers.IntegerField(min_value=0),
        "campaign": serializers.DictField(),
        **{table: serializers.ListField(child=serializers.DictField()) for table in STATE_TABLES},
    },
)
