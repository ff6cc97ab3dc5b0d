from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit log"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from audit.models import ToolInvocation
        from audit.rollup import campaign_leaving
        from audit.services.common import call_held
        from audit.tasks import expiry_schedule
        from campaigns.models import Campaign

        pre_delete.connect(
            campaign_leaving, sender=Campaign, dispatch_uid="rollup_campaign_leaving"
        )
        call_held.connect(expiry_schedule, sender=ToolInvocation, dispatch_uid="expiry_schedule")
