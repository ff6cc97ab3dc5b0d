from django.apps import AppConfig


class GmConfig(AppConfig):
    """An installed app so `manage.py gm_recover_turns` is found."""

    name = "gm"
    verbose_name = "Game master"
