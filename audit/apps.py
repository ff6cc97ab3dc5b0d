from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit log"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from audit.models import ToolInvocation
        from audit.rollup import campaign_leaving
        from audit.services.common import call_held
        from audit.tasks import expiry_reschedule, expiry_schedule
        from campaigns.models import Campaign
        from campaigns.services import approval_timeout_changed

        pre_delete.connect(
            campaign_leaving, sender=Campaign, dispatch_uid="rollup_campaign_leaving"
        )
        call_held.connect(expiry_schedule, sender=ToolInvocation, dispatch_uid="expiry_schedule")
        approval_timeout_changed.connect(
            expiry_reschedule, sender=Campaign, dispatch_uid="expiry_reschedule"
        )
