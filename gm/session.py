"""The runner's side of a GM turn: what a provider's words and tool calls become.

Narration leaves as `gm_text_delta` events through the one publisher, coalesced into chunks of
a few words so a long reply is not one database write and one broadcast per token. Write tools
go through the audited dispatch and nothing else; read tools (`get_state`, `roll_dice`) run
directly because they change nothing.
"""

from typing import Any

from ai_tools import registry
from ai_tools.base import ReadTool, ToolContext, ToolError
from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch
from campaigns.models import Turn
from campaigns.realtime import EventSource, broadcast_on_commit, event
from core.errors import AppError
from gm.base import ToolOutcome
from gm.context import GMContext

DELTA_MIN_CHARS = 24


class TurnSession:
    def __init__(self, *, turn: Turn, context: GMContext) -> None:
        self.turn = turn
        self.context = context
        self.invocations: list[str] = []
        self._said: list[str] = []
        self._pending = ""

    @property
    def text(self) -> str:
        return "".join(self._said).strip()

    def publish(
        self,
        type: str,
        data: dict[str, Any],
        *,
        source: EventSource = EventSource.AI_TOOL_EXECUTION,
    ) -> None:
        broadcast_on_commit(
            self.turn.campaign_id, [event(type, data, source=source, turn=self.turn.pk)]
        )

    def say(self, text: str) -> None:
        if not text:
            return
        self._said.append(text)
        self._pending += text
        if len(self._pending) >= DELTA_MIN_CHARS:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self.publish("gm_text_delta", {"text": self._pending})
            self._pending = ""

    def call_tool(self, name: str, input: Any, *, model: str) -> ToolOutcome:
        self.flush()
        read = registry.read_tool(name)
        if read is not None:
            return self._read(read, input)
        return self._write(name, input, model)

    def _tool_context(self) -> ToolContext:
        return ToolContext(campaign=self.context.campaign, actor=self.turn.actor, turn=self.turn)

    def _read(self, tool: ReadTool, input: Any) -> ToolOutcome:
        problem = tool.validate(input)
        if problem is not None:
            return ToolOutcome(False, {"error": f"Invalid input: {problem}"})
        try:
            return ToolOutcome(True, tool.run(self._tool_context(), input))
        except ToolError as exc:
            return ToolOutcome(False, {"error": str(exc)})

    def _write(self, name: str, input: Any, model: str) -> ToolOutcome:
        try:
            row = invocation_dispatch(
                campaign=self.context.campaign,
                actor=self.turn.actor,
                tool_name=name,
                input=input,
                turn=self.turn,
                model=model,
                source=InvocationOrigin.GM,
            )
        except AppError as exc:  # unknown tool, undone turn, or the audit log failing closed
            return ToolOutcome(False, {"error": exc.detail})
        self.invocations.append(str(row.pk))
        if row.status == ToolInvocation.Status.COMMITTED:
            return ToolOutcome(True, row.result or {}, str(row.pk))
        problem = row.error or f"The call is {row.status}."
        return ToolOutcome(False, {"error": problem, "status": row.status}, str(row.pk))
