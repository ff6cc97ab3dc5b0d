"""Websocket routes (docs/api.md#the-live-feed-websocket)."""

from django.urls import path, re_path

from web.consumers import CampaignConsumer, refuse_unknown_path

websocket_urlpatterns = [
    path("ws/campaigns/<uuid:campaign_id>/", CampaignConsumer.as_asgi()),
    re_path("", refuse_unknown_path),
]
