from django.apps import AppConfig


class WebConfig(AppConfig):
    """An installed app so the admin autodiscovers `web.admin` and templates load its tags."""

    name = "web"
    verbose_name = "Web surfaces"
