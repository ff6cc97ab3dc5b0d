"""`manage.py gm_recover_turns`: fail every turn a dead process left `running` (cron-friendly;
the runner also sweeps a campaign before each of its GM turns)."""

from typing import Any

from django.core.management.base import BaseCommand

from gm.services import turn_stale_fail


class Command(BaseCommand):
    help = "Fail GM turns left running past GM_TURN_TIMEOUT by a process that died."

    def handle(self, *args: Any, **options: Any) -> None:
        failed = turn_stale_fail()
        self.stdout.write(
            f"{len(failed)} stale turn(s) failed" + (f": {failed}" if failed else ".")
        )
