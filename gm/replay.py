"""Replay a recorded GM turn against another model, and change nothing.

What the seed calls "the hallucinated-damage rate per model version", answerable before an
upgrade: the turn's context (its player's message, the history and the state the GM saw when it
began, `GMTranscript.state`) goes to another provider, in a transaction that is always rolled
back, as approval previews are (audit/services/preview.py). Inside it the world is first put
back as it stood before the turn (the snapshots of the turn's committed calls and every later
one restored, newest first: `audit.services.revert.rewound_in_place`), then the replayed
model's calls run for real — validated, authorized with the GM's powers, applied — so each
shows what it would have done. No log row is written (not through the dispatch), no event
sent, nothing committed. The result sets the recorded calls (with which the table later undid)
beside the replayed ones.
"""

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from ai_tools import registry
from ai_tools.base import Powers, ToolContext, ToolError
from audit.models import ToolInvocation
from audit.permissions import authorize_replay
from audit.services.common import ToolFailed, campaign_lock, guarded
from audit.services.revert import rewound_in_place
from campaigns.models import ChatMessage, Turn
from campaigns.security import recording_denials
from core.errors import AppError, NotFound
from gm.base import GMError, GMProvider, Round, ToolOutcome
from gm.context import gm_context
from gm.models import GMTranscript


@dataclass
class Call:
    tool_name: str
    input: Any
    ok: bool
    outcome: Any  # the result, or the error, as the model read it
    undone: bool | None = None  # recorded calls only: did the table undo it later?


@dataclass
class Side:
    model: str
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    error: str = ""


@dataclass
class Replay:
    turn_id: int
    message: str
    recorded: Side
    replayed: Side


def turn_replay(
    *, turn_id: Any, provider: GMProvider, by: Any = None, ip: str | None = None
) -> Replay:
    """Replay the GM turn `turn_id` with `provider`; nothing it does is kept (see above).
    `by` is the person who asks (the admin: staff who read the log, `authorize_replay`, a
    refusal recorded from `ip`); None is the operator at the console (`manage.py gm_replay`)."""
    turn = Turn.objects.filter(pk=turn_id).select_related("actor", "campaign").first()
    transcript = GMTranscript.objects.filter(turn_id=turn_id).first()
    if turn is None or transcript is None:
        raise NotFound(f"No GM turn {turn_id}: only a turn the GM answered can be replayed.")
    if by is not None:
        with recording_denials(user=by, ip=ip):
            authorize_replay(user=by, campaign=turn.campaign)
    recorded = _recorded(turn)
    replayed = Side(model=provider.model)
    with transaction.atomic():
        campaign = campaign_lock(turn.campaign_id)
        rewound_in_place(campaign, turn=turn, by=turn.actor)
        session = ReplaySession(turn, campaign, gm_context(turn=turn, state=transcript.state))
        try:
            provider.run(session)
        except GMError as exc:
            replayed.error = str(exc)
        replayed.text = "".join(session.said).strip()
        replayed.calls = session.calls
        if session.rounds:
            replayed.model = session.rounds[-1].model
        transaction.set_rollback(True)
    return Replay(turn_id=turn.pk, message=turn_message(turn), recorded=recorded, replayed=replayed)


def turn_message(turn: Turn) -> str:
    """What the player said on the turn."""
    said = turn.messages.filter(role=ChatMessage.Role.PLAYER).order_by("pk").first()
    return said.content if said else ""


def _recorded(turn: Turn) -> Side:
    rows = ToolInvocation.objects.filter(campaign_id=turn.campaign_id, turn=turn)
    calls = [
        Call(
            tool_name=row.tool_name,
            input=row.input,
            ok=row.committed_at is not None,
            outcome=row.result if row.committed_at is not None else row.error,
            undone=row.status == ToolInvocation.Status.REVERTED,
        )
        for row in rows.exclude(status=ToolInvocation.Status.PENDING).order_by("sequence")
    ]
    gm = turn.messages.filter(role=ChatMessage.Role.GM).order_by("pk")
    text = "\n\n".join(m.content for m in gm)
    model = turn.gm_model or next((r.model for r in rows if r.model), "")
    return Side(model=model, text=text, calls=calls)


class ReplaySession:
    """A Session (gm/base.py) that keeps everything in memory and runs write tools directly,
    inside the replay's transaction: no dispatch, no log row, no broadcast."""

    def __init__(self, turn: Turn, campaign: Any, context: Any) -> None:
        self.turn = turn
        self.campaign = campaign
        self.context = context
        self.said: list[str] = []
        self.calls: list[Call] = []
        self.rounds: list[Round] = []

    def say(self, text: str) -> None:
        self.said.append(text)

    def step(self) -> None:
        """A replay is never cancelled, undone or taken over."""

    @contextmanager
    def streaming(self, hang_up: Any) -> Iterator[None]:
        yield

    def round(self, index: int) -> Round | None:
        return None  # every round is asked of the replayed model

    def record_round(self, *, content, stop_reason, model, text, usage=None) -> Round:
        stored = Round(len(self.rounds), content, stop_reason, model, text, None)
        self.rounds.append(stored)
        return stored

    def complete_round(self, round: Round, results: list[dict[str, Any]]) -> Round:
        stored = dataclasses.replace(round, results=results)
        self.rounds[round.index] = stored
        return stored

    def call_tool(self, name: str, input: Any, *, model: str, tool_use_id: str) -> ToolOutcome:
        outcome = self._run(name, input, tool_use_id)
        self.calls.append(Call(name, input, outcome.ok, outcome.content))
        return outcome

    def _run(self, name: str, input: Any, tool_use_id: str) -> ToolOutcome:
        ctx = ToolContext(
            campaign=self.campaign,
            actor=self.turn.actor,
            turn=self.turn,
            tool_use_id=tool_use_id,
            powers=Powers(gm=True),
        )
        read = registry.read_tool(name)
        try:
            tool = read or registry.write_tool(name)
        except AppError as exc:
            return ToolOutcome(False, {"error": exc.detail})
        problem = tool.validate(input)
        if problem is not None:
            return ToolOutcome(False, {"error": f"Invalid input: {problem}"})
        if read is not None:
            try:
                return ToolOutcome(True, read.run(ctx, input))
            except ToolError as exc:
                return ToolOutcome(False, {"error": str(exc)})
        savepoint = transaction.savepoint()
        try:
            guarded(tool, tool.authorize, ctx, input)
            guarded(tool, tool.write_set, ctx, input)
            result = guarded(tool, tool.apply, ctx, input)
        except ToolFailed as exc:
            transaction.savepoint_rollback(savepoint)
            return ToolOutcome(False, {"error": str(exc)})
        transaction.savepoint_commit(savepoint)
        return ToolOutcome(True, result or {})
