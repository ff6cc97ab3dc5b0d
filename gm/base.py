"""What a GM provider is, and what it may ask of the turn it runs.

A provider turns the table's context into narration and tool calls. It never touches the
database or the channel layer itself: it speaks through a `Session`, which streams its words to
the table and sends every write through the audited dispatch. So a new provider (another model
vendor, a rules engine) cannot bypass the log or the undo.

A turn may be run more than once (its worker died; later, an approval paused it), so a provider
plays it as rounds through the session: a round already stored is replayed from the transcript,
never asked of the model again, and its tool calls, each named by its tool_use id, return the
outcome they had instead of running twice.
"""

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import httpx2

from gm.context import GMContext


class GMError(Exception):
    """The provider could not finish the turn; the message is shown to the table as it is."""


class TurnStopped(Exception):
    """The turn must stop at this step: someone cancelled it, it was undone, this runner lost
    its lease (the turn went on elsewhere), or a tool call waits for a human's approval (the
    turn pauses in the database and its worker is freed). Providers let it through."""

    CANCELLED = "cancelled"
    UNDONE = "undone"
    LOST = "lost"
    PAUSED = "paused"

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class Round:
    """One stored round of a turn's conversation: the model's reply as it goes back to the
    model (text and tool_use blocks), why it stopped, what it narrated, and, once the round is
    complete, the tool_result blocks of its calls."""

    index: int
    content: list[dict[str, Any]]
    stop_reason: str
    model: str
    text: str
    results: list[dict[str, Any]] | None

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [block for block in self.content if block["type"] == "tool_use"]


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

    def step(self) -> None:
        """Raise TurnStopped if the turn must stop here (before a new round or tool call)."""

    def streaming(self, hang_up: Callable[[], None]) -> AbstractContextManager[None]:
        """Read a model's stream inside this: if the turn is stopped meanwhile (cancelled,
        undone), `hang_up` is called from another thread to close the stream, and whatever the
        read raised then, or the stream's end, leaves the block as TurnStopped. Nothing of the
        unfinished reply may be recorded or run."""

    def call_tool(self, name: str, input: Any, *, model: str, tool_use_id: str) -> ToolOutcome:
        """Run a tool: write tools through the audited dispatch with `model` on the log row.
        A tool_use id that ran before returns the outcome it had, without running again."""

    def round(self, index: int) -> Round | None:
        """The stored round `index` of this turn, or None if it is still to be played."""

    def record_round(
        self,
        *,
        content: list[dict[str, Any]],
        stop_reason: str,
        model: str,
        text: str,
        usage: tuple[int, int] | None = None,
    ) -> Round:
        """Store the model's complete reply as the next round, before any of its tool calls
        runs (a round without tool calls is complete at once); `usage` is (tokens in, tokens
        out) when the server reported them, for the turn's figures."""

    def complete_round(self, round: Round, results: list[dict[str, Any]]) -> Round:
        """Store the tool_result blocks of a round's calls."""


class GMProvider(ABC):
    name: ClassVar[str] = ""

    @property
    @abstractmethod
    def model(self) -> str:
        """`provider/model-version`, as the invocation log and its analytics record it."""

    @abstractmethod
    def run(self, session: Session) -> None:
        """Answer the turn in `session.context`; raise GMError when it cannot."""


@contextmanager
def failures_told(sdk: Any, server: str, describe: Callable[[Any], str]) -> Iterator[None]:
    """A model SDK's failures as a GMError in an operator's words: `sdk` is the official SDK
    module (anthropic and openai raise the same family of errors), `server` how the messages
    name the far end, `describe` the words for an error status the server answered with."""
    try:
        yield
    except sdk.APIStatusError as exc:
        raise GMError(describe(exc)) from exc
    except sdk.APIConnectionError as exc:
        raise GMError(f"{server} could not be reached ({error_cause(exc)}).") from exc
    except httpx2.TransportError as exc:
        raise GMError(f"the connection to {server} broke mid-stream ({error_cause(exc)}).") from exc
    except sdk.APIError as exc:
        raise GMError(f"{server} failed: {exc.message}") from exc


def error_cause(exc: BaseException) -> str:
    """The exception and what caused it, by name: 'APIConnectionError: Connection error.
    (ConnectError: ...)' tells an operator more than 'internal error'."""
    text = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__
    if cause is None or str(cause) == str(exc):
        return text
    return f"{text} ({type(cause).__name__}: {cause})"
