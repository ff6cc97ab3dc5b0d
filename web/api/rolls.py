"""Dice rolled from the page or by any client (docs/api.md#dice): the roll is made with the
`roll_dice` tool's dice (`ai_tools.dice`), kept in the feed and shown live to every client."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from ai_tools.base import ToolError
from ai_tools.dice import dice_roll
from campaigns.models import DiceRoll
from campaigns.selectors import campaign_get_visible, roll_list
from core.api.base import ApiListView, StrictSerializer, client_ip, list_schema
from core.api.errors import ErrorSerializer, error_responses
from web.api.serializers import UsernameField


class RollInput(StrictSerializer):
    formula = serializers.CharField(
        max_length=20,
        help_text="Dice as `NdS+M`: `d20`, `2d6+3`, `1d8-1`; 1-50 dice of 2-100 sides.",
    )
    mode = serializers.ChoiceField(
        choices=DiceRoll.Mode.choices,
        default=DiceRoll.Mode.NORMAL,
        help_text="`advantage` rolls the formula twice and keeps the higher total, "
        "`disadvantage` the lower.",
    )


class RollSerializer(serializers.ModelSerializer):
    author = UsernameField()
    dice = serializers.ListField(
        child=serializers.IntegerField(), help_text="The kept roll's dice, in the order rolled."
    )
    discarded = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Under advantage or disadvantage, the other roll's dice; else empty.",
    )

    class Meta:
        model = DiceRoll
        fields = [
            "id",
            "formula",
            "mode",
            "dice",
            "discarded",
            "modifier",
            "total",
            "author",
            "by_gm",
            "turn",
            "created_at",
        ]


class RollRateThrottle(SimpleRateThrottle):
    """Rolls per user (DICE_RATE): each one reaches every client's feed, so a script cannot
    flood a table. Only rolling counts, not reading the list."""

    scope = "dice"

    def get_rate(self) -> str | None:
        # Read when used, not at import as DRF's class attribute does, so settings stay live.
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if request.method != "POST":
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


@list_schema("dice", "The campaign's dice rolls, newest first")
class RollListView(ApiListView):
    """Members roll dice for the table to see; everyone in the campaign reads the rolls, the
    players' and the GM's (`roll_dice`), newest first. Each roll is announced live as a
    `dice_rolled` event."""

    serializer_class = RollSerializer
    ordering = "-created_at"
    throttle_classes = [RollRateThrottle]

    def get_queryset(self):
        campaign = campaign_get_visible(
            campaign_id=self.kwargs["campaign_id"], user=self.request.user
        )
        return roll_list(campaign=campaign)

    @extend_schema(
        summary="Roll dice for the table: stored, and shown to every client live",
        request=RollInput,
        responses={201: RollSerializer, 429: ErrorSerializer, **error_responses(403)},
    )
    def post(self, request: Request, campaign_id: Any) -> Response:
        campaign = campaign_get_visible(campaign_id=campaign_id, user=request.user)
        data = RollInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            roll = dice_roll(
                campaign=campaign,
                author=request.user,
                ip=client_ip(request),
                **data.validated_data,
            )
        except ToolError as exc:
            raise serializers.ValidationError({"formula": [str(exc)]}) from exc
        return Response(RollSerializer(roll).data, status=status.HTTP_201_CREATED)
