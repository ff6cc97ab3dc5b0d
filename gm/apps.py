from django.apps import AppConfig


class GmConfig(AppConfig):
    """An installed app: its transcript models, and `manage.py gm_recover_turns`."""

    name = "gm"
    verbose_name = "Game master"
