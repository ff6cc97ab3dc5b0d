"""The tools an MCP client lists: the fifteen write tools under their REST names and input
schemas, the reads, the turn and the undos, each with its annotations and the reversibility
extension's `_meta` (docs/mcp.md#annotations). Nothing here decides who may call what: every
call goes to a service, which decides (`web.mcp.calls`).
"""

from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from ai_tools import registry
from ai_tools.base import Tier, WriteTool
from ai_tools.tools.schema import obj

# The namespace of this server's `_meta` keys (docs/mcp.md#the-reversibility-extension).
NS = "undoable.gm/"
TIER, UNDOABLE, REACH, UNDO_WITH = (f"{NS}{key}" for key in ("tier", "undoable", "reach", "undo"))
# What a client may put in a request's `_meta`: the turn a call joins, the model behind it.
TURN, MODEL = f"{NS}turn", f"{NS}model"

UUID_STRING = {"type": "string", "format": "uuid", "maxLength": 36}
TURN_ID = {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
REASON = {"type": "string", "maxLength": 500}
CASCADE = {
    "type": "boolean",
    "description": "Also undo the later calls that depend on it (else a conflict names them).",
}


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()


def write_tool_listing(tool: WriteTool) -> types.Tool:
    """A write tool as MCP lists it: its REST name, schema and description; `readOnlyHint`
    false, `destructiveHint` on the critical tier, `idempotentHint` as the tool declares."""
    return types.Tool(
        name=tool.name,
        title=_title(tool.name),
        description=(
            f"{tool.description} Logged before it runs and undoable (undo_invocation); "
            f"tier {tool.tier}: the campaign's approval policy may hold it for a human."
        ),
        input_schema=tool.schema,
        annotations=types.ToolAnnotations(
            title=_title(tool.name),
            read_only_hint=False,
            destructive_hint=tool.tier == Tier.CRITICAL,
            idempotent_hint=tool.idempotent,
            open_world_hint=False,
        ),
        _meta={
            TIER: str(tool.tier),
            UNDOABLE: True,
            REACH: str(tool.reach),
            UNDO_WITH: "undo_invocation",
        },
    )


@dataclass(frozen=True)
class Own:
    """One of this server's own tools (not a write tool of the registry)."""

    name: str
    description: str
    schema: dict[str, Any]
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    def listing(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=_title(self.name),
            description=self.description,
            input_schema=self.schema,
            annotations=types.ToolAnnotations(
                title=_title(self.name),
                read_only_hint=self.read_only,
                destructive_hint=self.destructive,
                idempotent_hint=self.idempotent,
                open_world_hint=False,
            ),
            _meta={UNDOABLE: False, **self.meta},
        )


OWN_TOOLS = (
    Own(
        "begin_turn",
        "Open a new turn with a message saying what you are about to do. The write calls that "
        "follow join it (until the next begin_turn, or after an idle spell); undo_turn undoes "
        "them all at once. Returns `turn`.",
        obj({"message": {"type": "string", "minLength": 1, "maxLength": 2000}}, ("message",)),
        read_only=False,
    ),
    Own(
        "get_state",
        "The campaign's state, as GET …/state/ serves it to you (a player sees what the fog "
        "leaves), with the event `seq` it reflects.",
        obj({}),
        read_only=True,
        idempotent=True,
    ),
    Own(
        "recent_log",
        "The latest tool calls of the campaign's log, newest first: status, tool, input, turn, "
        "who made them, and any approval.",
        obj({"limit": {"type": "integer", "minimum": 1, "maximum": 50}}),
        read_only=True,
        idempotent=True,
    ),
    Own(
        "pending_approvals",
        "The calls held for a human's approval, each with its preview (what it would change) "
        "and when it expires. Approvers answer them on the campaign page or the admin queue.",
        obj({}),
        read_only=True,
        idempotent=True,
    ),
    Own(
        "get_invocation",
        "One logged call: its status, result or error, and for a held call the approval's "
        "outcome (approved and ran, rejected, expired). Poll it after awaiting_approval.",
        obj({"invocation_id": UUID_STRING}, ("invocation_id",)),
        read_only=True,
        idempotent=True,
    ),
    Own(
        "undo_invocation",
        "Undo one logged call exactly (its actor, the owner and the co-GMs may). A later call "
        "that depends on it is a conflict unless `cascade`. Undoing twice changes nothing more.",
        obj(
            {"invocation_id": UUID_STRING, "reason": REASON, "cascade": CASCADE},
            ("invocation_id",),
        ),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Own(
        "undo_turn",
        "Undo every call of a turn, newest first, atomically (your agent's unit of work: the "
        "`turn` each call returned). Undoing twice changes nothing more.",
        obj({"turn_id": TURN_ID, "reason": REASON, "cascade": CASCADE}, ("turn_id",)),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
)
OWN = {tool.name: tool for tool in OWN_TOOLS}


def listing() -> list[types.Tool]:
    """Every tool, write tools first (the registry's order), then this server's own."""
    return [write_tool_listing(t) for t in registry.write_tools()] + [
        t.listing() for t in OWN_TOOLS
    ]
