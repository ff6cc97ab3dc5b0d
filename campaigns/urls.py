"""People's pages: sign-in/up, the campaign list and the campaign page (SPEC §8)."""

urlpatterns: list = []
