"""Websocket routes (SPEC §7)."""

from django.urls import path

from campaigns.consumers import CampaignConsumer

websocket_urlpatterns = [
    path("ws/campaigns/<uuid:campaign_id>/", CampaignConsumer.as_asgi()),
]
