"""`manage.py verify_log [--campaign ID] [--expect FILE]`: walk each campaign's keyed chain,
report the first broken link, and print each chain's head (`HEAD campaign=… length=… hash=…`).

Keep that output outside the database (another host, a ticket, a printout): a later run with
`--expect FILE` checks that every chain still starts with what was anchored, so a log whose
tail was cut off (the one change a chain cannot show by itself) is reported too. Exits non-zero
when anything fails, so it can gate a cron job or a deploy.
"""

import re
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.chain import Report, check
from campaigns.models import Campaign

HEAD = re.compile(r"^HEAD campaign=(\S+) length=(\d+) hash=([0-9a-f]{64}|-)$")


def head_line(report: Report) -> str:
    return f"HEAD campaign={report.campaign_id} length={report.length} hash={report.head or '-'}"


def read_anchors(path: str) -> dict[str, tuple[int, str]]:
    """The HEAD lines of a saved run (other lines ignored): campaign id -> (length, hash)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CommandError(f"Cannot read the anchor file: {exc}") from exc
    found = (HEAD.match(line.strip()) for line in text.splitlines())
    return {m[1]: (int(m[2]), "" if m[3] == "-" else m[3]) for m in found if m}


def anchor_problem(report: Report, length: int, expected: str) -> str | None:
    if report.length < length:
        return (
            f"campaign {report.campaign_id}: {report.length} links, but {length} were anchored: "
            "links were removed from the end of the log"
        )
    if length and report.hash_at != expected:
        return (
            f"campaign {report.campaign_id}: link {length} no longer matches its anchor: "
            "the log was rewritten"
        )
    return None


class Command(BaseCommand):
    help = "Verify the tamper-evident chain of the invocation log and print each chain's head."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", help="Only this campaign's log (its id).")
        parser.add_argument(
            "--expect",
            metavar="FILE",
            help="A saved earlier output: each chain must still begin with its anchored head.",
        )

    def handle(
        self, *args: Any, campaign: str | None = None, expect: str | None = None, **options: Any
    ) -> None:
        anchors = read_anchors(expect) if expect else {}
        campaigns = Campaign.objects.order_by("created_at", "pk").values_list("pk", flat=True)
        if campaign:
            campaigns = campaigns.filter(pk=campaign)
            if not campaigns.exists():
                raise CommandError(f"No campaign {campaign}.")
            anchors = {k: v for k, v in anchors.items() if k == str(campaign)}
        failures = []
        for cid in campaigns.iterator():
            length, expected = anchors.pop(str(cid), (None, ""))
            report = check(cid, at=length)
            self.stdout.write(head_line(report))
            if report.broken:
                failures.append(f"BROKEN {report.broken}")
            if length is not None and (problem := anchor_problem(report, length, expected)):
                failures.append(f"ANCHOR {problem}")
        failures += [f"ANCHOR campaign {cid}: anchored, but no longer exists" for cid in anchors]
        for failure in failures:
            self.stderr.write(failure)
        if failures:
            raise CommandError(f"{len(failures)} problem(s) found in the invocation log.")
        self.stdout.write(f"OK: {campaigns.count()} campaign log(s) verified, every link intact.")
