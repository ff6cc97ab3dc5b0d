from django.apps import AppConfig


class GmConfig(AppConfig):
    """An installed app: its transcript models, and `manage.py gm_recover_turns`."""

    name = "gm"
    verbose_name = "Game master"

    def ready(self) -> None:
        from audit.services.approval import approval_resolved
        from gm.tasks import turn_resume

        approval_resolved.connect(turn_resume, dispatch_uid="gm.turn_resume")
