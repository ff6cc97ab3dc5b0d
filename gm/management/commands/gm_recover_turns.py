"""`manage.py gm_recover_turns`: look at every GM turn whose lease or wait has run out, as its
watchdog would: resume a turn whose worker died (or fail it past GM_MAX_ATTEMPTS), and hand a
stranded queued turn to a worker. Each turn's watchdog task does this on its own; the command is
a cron-friendly backstop for a watchdog lost with the worker that was running it."""

from typing import Any

from django.core.management.base import BaseCommand

from gm.tasks import turns_recover


class Command(BaseCommand):
    help = "Resume or fail GM turns whose worker lost its lease; re-enqueue stranded turns."

    def handle(self, *args: Any, **options: Any) -> None:
        outcomes = turns_recover()
        if not outcomes:
            self.stdout.write("No GM turn is overdue.")
        for outcome, turn_ids in sorted(outcomes.items()):
            self.stdout.write(f"{outcome}: {len(turn_ids)} turn(s) {turn_ids}")
