"""Fill each campaign's log head (`Campaign.log_sequence`, `Campaign.log_head`) from its chain:
the last row's sequence number and the last link's hash (the last status transition after that
row, else the row's own). From here on every writer of the log keeps them current."""

from django.db import migrations


def fill_heads(apps, schema_editor):
    Campaign = apps.get_model("campaigns", "Campaign")
    ToolInvocation = apps.get_model("audit", "ToolInvocation")
    StatusTransition = apps.get_model("audit", "StatusTransition")
    for campaign_id in ToolInvocation.objects.values_list("campaign_id", flat=True).distinct():
        sequence, head = (
            ToolInvocation.objects.filter(campaign_id=campaign_id)
            .order_by("-sequence")
            .values_list("sequence", "row_hash")
            .first()
        )
        after = (
            StatusTransition.objects.filter(campaign_id=campaign_id, after_sequence=sequence)
            .order_by("-ordinal")
            .values_list("row_hash", flat=True)
            .first()
        )
        Campaign.objects.filter(pk=campaign_id).update(
            log_sequence=sequence, log_head=after or head
        )


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0011_analytics_indexes"),
        ("campaigns", "0007_campaign_log_head"),
    ]

    operations = [migrations.RunPython(fill_heads, migrations.RunPython.noop)]
