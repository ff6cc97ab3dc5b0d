"""`manage.py analytics_rollup [--rebuild]`: fold the log into the analytics rollup now (what the
first analytics read would do), or with `--rebuild` empty it and fold the whole log again.

The rollup (audit/rollup.py) is derived from the log: readers keep it current by themselves.
Rebuild it after anything that changed the log other than by appending to it (a restore from a
backup taken before the rollup's, a repair by hand); run it once after deploying the migration
that creates it, so the first reader does not pay for folding a long log.
"""

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from audit.models import AnalyticsMark, ToolDay, ToolDayAll
from audit.rollup import rollup_refresh


class Command(BaseCommand):
    help = "Fold the invocation log into the analytics rollup (--rebuild: from scratch)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--rebuild", action="store_true", help="empty the rollup first, then fold everything"
        )

    def handle(self, *args: Any, rebuild: bool = False, **options: Any) -> None:
        started = time.perf_counter()
        with transaction.atomic():
            if rebuild:
                # Every mark locked first: a reader folding meanwhile waits, then finds nothing.
                list(AnalyticsMark.objects.select_for_update().order_by("campaign_id"))
                ToolDay.objects.all().delete()
                ToolDayAll.objects.all().delete()
                AnalyticsMark.objects.all().delete()
            moved = rollup_refresh()
        self.stdout.write(
            f"{'rebuilt' if rebuild else 'folded'}: {moved} campaign(s) in "
            f"{time.perf_counter() - started:.1f} s"
        )
