"""The runner's side of a GM turn: what a provider's words, rounds and tool calls become.

Narration leaves as `gm_text_delta` events through the one publisher, coalesced into chunks of
a few words so a long reply is not one database write and one broadcast per token. Write tools
go through the audited dispatch and nothing else, each with its tool_use id: one that already
ran on this turn (before a crash) returns the outcome it had instead of applying twice. Read
tools (`get_state`, `roll_dice`) run directly because they change nothing. Rounds are stored in
the transcript as they complete, by the runner that holds the turn's lease and no other.
"""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ai_tools import registry
from ai_tools.base import ReadTool, ToolContext, ToolError
from audit.models import ApprovalAnswer, InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch
from audit.services.approval import approval_answer
from campaigns.events import Event, GMTextDelta
from campaigns.models import Source, Turn
from campaigns.realtime import broadcast_on_commit, event
from core.errors import AppError
from gm.base import Round, ToolOutcome, TurnStopped
from gm.context import GMContext
from gm.lease import Heartbeat, turn_now
from gm.transcript import round_complete, round_record

DELTA_MIN_CHARS = 24

# A held call's statuses once a person (or the clock) has answered it.
ANSWERED = (
    ToolInvocation.Status.PENDING,
    ToolInvocation.Status.REJECTED,
    ToolInvocation.Status.EXPIRED,
)


class TurnSession:
    def __init__(
        self,
        *,
        turn: Turn,
        context: GMContext,
        owner: str,
        attempt: int,
        rounds: list[Round],
        lost: threading.Event | None = None,
        watch: Heartbeat | None = None,
    ) -> None:
        self.turn = turn
        self.context = context
        self.owner = owner
        self.attempt = attempt
        self.rounds = rounds
        self._lost = lost or (watch.lost if watch is not None else threading.Event())
        self._watch = watch
        self._said: list[str] = []
        self._pending = ""
        # The tool_use ids of the rounds this session stored: calls that ran nowhere yet.
        self._new_uses: set[str] = set()
        # Set when the turn paused for an approval: the runner leaves it as it is.
        self.paused = False
        # This attempt's figures (Turn.first_word_ms and the rest): when it began, when it
        # first spoke, the tokens its new rounds cost.
        self.started = time.monotonic()
        self.first_word_ms: int | None = None
        self.tokens: list[int] | None = None

    @property
    def text(self) -> str:
        return "".join(self._said).strip()

    def publish(self, payload: Event, *, source: Source = Source.AI_TOOL_EXECUTION) -> None:
        broadcast_on_commit(
            self.turn.campaign_id, [event(payload, source=source, turn=self.turn.pk)]
        )

    def say(self, text: str) -> None:
        if not text:
            return
        self._check_lease()
        self._check_stopped()
        if self.first_word_ms is None and text.strip():
            self.first_word_ms = self.elapsed_ms()
        self._said.append(text)
        self._pending += text
        if len(self._pending) >= DELTA_MIN_CHARS:
            self.flush()

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def flush(self) -> None:
        if self._pending:
            self._check_lease()
            self.publish(GMTextDelta(text=self._pending))
            self._pending = ""

    def step(self) -> None:
        self._check_lease()
        now = turn_now(self.turn.pk)
        if now is None or now.status != Turn.Status.RUNNING or now.lease_owner != self.owner:
            raise TurnStopped(TurnStopped.LOST)
        if now.reverted_at is not None:
            raise TurnStopped(TurnStopped.UNDONE)
        if now.cancel_requested_at is not None:
            raise TurnStopped(TurnStopped.CANCELLED)

    @contextmanager
    def streaming(self, hang_up: Callable[[], None]) -> Iterator[None]:
        if self._watch is None:
            yield
            return
        release = self._watch.hold(hang_up)
        try:
            yield
        except Exception:
            self._check_stopped()  # the read failed because we hung up: a stop, not an error
            raise
        finally:
            release()
        self._check_stopped()

    def _check_lease(self) -> None:
        if self._lost.is_set():
            raise TurnStopped(TurnStopped.LOST)

    def _check_stopped(self) -> None:
        if self._watch is not None and self._watch.stopped.is_set():
            raise TurnStopped(self._watch.why)

    def round(self, index: int) -> Round | None:
        return self.rounds[index] if index < len(self.rounds) else None

    def record_round(
        self,
        *,
        content: list[dict[str, Any]],
        stop_reason: str,
        model: str,
        text: str,
        usage: tuple[int, int] | None = None,
    ) -> Round:
        self._check_lease()
        if usage is not None:
            self.tokens = [a + b for a, b in zip(self.tokens or [0, 0], usage, strict=True)]
        stored = round_record(
            turn=self.turn,
            owner=self.owner,
            attempt=self.attempt,
            index=len(self.rounds),
            content=content,
            stop_reason=stop_reason,
            model=model,
            text=text,
        )
        self.rounds.append(stored)
        self._new_uses.update(use["id"] for use in stored.tool_uses)
        return stored

    def complete_round(self, round: Round, results: list[dict[str, Any]]) -> Round:
        self._check_lease()
        stored = round_complete(
            turn=self.turn, owner=self.owner, index=round.index, results=results
        )
        self.rounds[round.index] = stored
        return stored

    def call_tool(self, name: str, input: Any, *, model: str, tool_use_id: str) -> ToolOutcome:
        self.flush()
        self.step()
        read = registry.read_tool(name)
        if read is not None:
            return self._read(read, input, tool_use_id)
        # A call of a round this session stored ran nowhere before: the log is asked only about
        # the calls of rounds stored by an earlier run (should another runner have taken the
        # turn since, the log refuses the call's second row, and `_write` reads the first).
        recorded = None if tool_use_id in self._new_uses else self._recorded(tool_use_id)
        return recorded or self._write(name, input, model, tool_use_id)

    def _tool_context(self, tool_use_id: str = "") -> ToolContext:
        return ToolContext(
            campaign=self.context.campaign,
            actor=self.turn.actor,
            turn=self.turn,
            tool_use_id=tool_use_id,
        )

    def _read(self, tool: ReadTool, input: Any, tool_use_id: str) -> ToolOutcome:
        problem = tool.validate(input)
        if problem is not None:
            return ToolOutcome(False, {"error": f"Invalid input: {problem}"})
        try:
            return ToolOutcome(True, tool.run(self._tool_context(tool_use_id), input))
        except ToolError as exc:
            return ToolOutcome(False, {"error": str(exc)})

    def _recorded(self, tool_use_id: str) -> ToolOutcome | None:
        """The outcome this tool_use had when it ran before, on an earlier attempt."""
        found = ToolInvocation.objects.filter(
            campaign_id=self.turn.campaign_id, turn_id=self.turn.pk, tool_use_id=tool_use_id
        ).first()
        return None if found is None else _outcome(found)

    def _write(self, name: str, input: Any, model: str, tool_use_id: str) -> ToolOutcome:
        try:
            row = invocation_dispatch(
                campaign=self.context.campaign,
                actor=self.turn.actor,
                tool_name=name,
                input=input,
                turn=self.turn,
                model=model,
                source=InvocationOrigin.GM,
                tool_use_id=tool_use_id,
            )
        except AppError as exc:  # unknown tool, undone turn, or the audit log failing closed
            # A runner that lost its lease may have logged this very tool_use a moment before
            # (the log refuses a second row for it, failing closed): its outcome is the one.
            return self._recorded(tool_use_id) or ToolOutcome(False, {"error": exc.detail})
        return _outcome(row)


def _outcome(row: ToolInvocation) -> ToolOutcome:
    """What the model reads for a logged call. A call held for approval pauses the turn
    (TurnStopped.PAUSED) until someone answers; approved, it is the outcome of the row it ran
    as; rejected or expired, an error saying why."""
    if row.status == ToolInvocation.Status.AWAITING_APPROVAL:
        raise TurnStopped(TurnStopped.PAUSED)
    if row.status in ANSWERED:
        answer = approval_answer(row)
        if answer["status"] == ApprovalAnswer.APPROVED:
            return _outcome(row.approved_runs.get())
        return ToolOutcome(False, {"error": answer["reason"], "status": row.status}, str(row.pk))
    if row.committed_at is not None:  # committed (and perhaps reverted since)
        return ToolOutcome(True, row.result or {}, str(row.pk))
    problem = row.error or f"The call is {row.status}."
    return ToolOutcome(False, {"error": problem, "status": row.status}, str(row.pk))
