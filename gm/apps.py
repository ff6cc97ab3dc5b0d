from django.apps import AppConfig


class GmConfig(AppConfig):
    """An installed app: its transcript models, `manage.py gm_recover_turns`, and
    `manage.py task_worker` with the NOTIFY that wakes it."""

    name = "gm"
    verbose_name = "Game master"

    def ready(self) -> None:
        from django.db.models.signals import post_save
        from django_tasks_db.models import DBTaskResult

        from audit.services.approval import approval_resolved
        from gm.tasks import turn_resume
        from gm.wakeup import notify_enqueued

        approval_resolved.connect(turn_resume, dispatch_uid="gm.turn_resume")
        post_save.connect(notify_enqueued, sender=DBTaskResult, dispatch_uid="gm.notify_enqueued")
