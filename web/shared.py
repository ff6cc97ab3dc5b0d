"""What the surfaces share, below each of them: the campaign a request names (404 for a
non-member before anything else is looked at), its input validated by the API's serializers,
and ids as people type them. The API (`web.api`), the pages (`web.pages`) and the admin import
these; none of them imports another surface."""

import uuid
from typing import Any

from rest_framework import serializers
from rest_framework.request import Request

from campaigns.models import Campaign
from campaigns.selectors import campaign_get_visible


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def visible_campaign(request: Request, campaign_id: Any) -> Campaign:
    return campaign_get_visible(campaign_id=campaign_id, user=request.user)


def ascii_uuid(text: str) -> uuid.UUID:
    """`uuid.UUID` for an id someone typed. It reads its hex through int(), which takes every
    script's digits ("１２…" would name the row "12…"); an id is ASCII. ValueError otherwise."""
    if not text.isascii():
        raise ValueError(f"{text!r} is not a UUID")
    return uuid.UUID(text)
