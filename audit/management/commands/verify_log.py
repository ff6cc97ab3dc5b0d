"""`manage.py verify_log [--campaign ID]`: walk each campaign's hash chain and report the first
broken link. Exits non-zero when any chain is broken, so it can gate a cron job or a deploy."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.chain import verify
from campaigns.models import Campaign


class Command(BaseCommand):
    help = "Verify the tamper-evident hash chain of the invocation log."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", help="Only this campaign's log (its id).")

    def handle(self, *args: Any, campaign: str | None = None, **options: Any) -> None:
        campaigns = Campaign.objects.order_by("created_at", "pk").values_list("pk", flat=True)
        if campaign:
            campaigns = campaigns.filter(pk=campaign)
            if not campaigns.exists():
                raise CommandError(f"No campaign {campaign}.")
        breaks = [found for cid in campaigns.iterator() if (found := verify(cid))]
        for found in breaks:
            self.stderr.write(f"BROKEN {found}")
        if breaks:
            raise CommandError(f"{len(breaks)} campaign log(s) fail verification.")
        self.stdout.write(f"OK: {campaigns.count()} campaign log(s) verified, every link intact.")
