"""The REST API (SPEC §6)."""

urlpatterns: list = []
