"""`manage.py gm_replay TURN_ID --provider P [--model M]`: run a recorded GM turn's context
against another model from the turn's pre-state, in a transaction that is rolled back, and
print the two models' narration and tool calls side by side, with which recorded calls the
table later undid. Nothing is committed or broadcast (gm/replay.py)."""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.errors import AppError
from gm.base import GMError
from gm.providers import provider_for
from gm.replay import Replay, Side, turn_replay


class Command(BaseCommand):
    help = "Replay a recorded GM turn against another model; nothing is kept."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("turn_id", type=int)
        parser.add_argument("--provider", required=True, help="a GM this server configures")
        parser.add_argument("--model", default=None, help="another model of that provider")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            provider = provider_for(options["provider"], model=options["model"])
            replay = turn_replay(turn_id=options["turn_id"], provider=provider)
        except (GMError, AppError) as exc:
            raise CommandError(str(getattr(exc, "detail", exc))) from exc
        self.stdout.write(render(replay))


def render(replay: Replay) -> str:
    lines = [f"Turn {replay.turn_id}: {replay.message}", ""]
    for title, side in (("recorded", replay.recorded), ("replayed", replay.replayed)):
        lines += _side(title, side)
    lines.append("Nothing of the replay was kept: it ran in a transaction rolled back.")
    return "\n".join(lines)


def _side(title: str, side: Side) -> list[str]:
    lines = [f"== {title}: {side.model or '(unknown model)'}", f"narration: {side.text or '—'}"]
    if side.error:
        lines.append(f"failed: {side.error}")
    if not side.calls:
        lines.append("calls: none")
    for n, call in enumerate(side.calls, 1):
        state = "ok" if call.ok else "failed"
        if call.undone:
            state += ", later undone by the table"
        data = json.dumps(call.input, sort_keys=True, default=str)
        outcome = json.dumps(call.outcome, sort_keys=True, default=str)
        lines.append(f"  {n}. {call.tool_name} {data} [{state}] -> {outcome}")
    lines.append("")
    return lines
