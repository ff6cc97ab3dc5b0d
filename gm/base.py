"""What a GM provider is, and what it may ask of the turn it runs.

A provider turns the table's context into narration and tool calls. It never touches the
database or the channel layer itself: it speaks through a `Session`, which streams its words to
the table and sends every write through the audited dispatch. So a new provider (another model
vendor, a rules engine) cannot bypass the log or the undo.
"""

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from gm.context import GMContext


class GMError(Exception):
    """The provider could not finish the turn; the message is shown to the table as it is."""


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call came to, in the form the model reads it."""

    ok: bool
    content: dict[str, Any]
    invocation: str | None = None

    def as_text(self) -> str:
        return json.dumps(self.content, sort_keys=True, default=str)


class Session(Protocol):
    context: GMContext

    def say(self, text: str) -> None:
        """Stream narration to the table."""

    def call_tool(self, name: str, input: Any, *, model: str) -> ToolOutcome:
        """Run a tool: write tools through the audited dispatch with `model` on the log row."""


class GMProvider(ABC):
    name: ClassVar[str] = ""

    @property
    @abstractmethod
    def model(self) -> str:
        """`provider/model-version`, as the invocation log and its analytics record it."""

    @abstractmethod
    def run(self, session: Session) -> None:
        """Answer the turn in `session.context`; raise GMError when it cannot."""
