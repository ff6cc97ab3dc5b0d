"""An MCP `tools/call` translated into a service call and back (synchronous: it runs in a
worker thread, like a view). Every write goes through the audited dispatch as the token's user
(`audit.services.agent.agent_call`, origin `mcp`); the undos are the REST undos' services; the
reads are the REST reads' selectors and serializers. Every decision is the services': a refusal
comes back as an `isError` result whose text says why, and changes nothing.
"""

from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.db import close_old_connections

from ai_tools import registry
from ai_tools.base import Tool
from audit.models import InvocationOrigin, ToolInvocation
from audit.selectors import calls_concealed, invocation_get, invocation_list, viewer_rights
from audit.services import invocation_revert, turn_undo
from audit.services.agent import agent_call, agent_turn_begin
from campaigns.selectors import campaign_get_visible, campaign_state_at_seq, creature_names
from campaigns.visibility import HIDDEN_CHANGE, Sight, fog_read, sight_of
from core.errors import AppError, CallRefused, NotFound
from web.api.audit.serializers import (
    InvocationSerializer,
    RevertResultSerializer,
    UndoResultSerializer,
    public_preview,
)
from web.mcp.tools import MODEL, OWN, TURN
from web.pages.changes import describe
from web.pages.presenters import names_seen
from web.shared import ascii_uuid

Status = ToolInvocation.Status
LOG_LIMIT = 20


@dataclass(frozen=True)
class Caller:
    """Who calls, from where, with what: the token's user, the campaign of the path, the
    client (its name and version, or the model it says it is) and the peer's address."""

    user: Any
    campaign_id: Any
    client: str
    ip: str | None


def client_name(meta: dict[str, Any] | None, user_agent: str) -> str:
    """The log row's `model` for an MCP call: the model the client names in `_meta`
    (`undoable.gm/model`), else the client's own name and version (from its `clientInfo`), else
    its User-Agent: "mcp:<what>"."""
    meta = meta or {}
    model = meta.get(MODEL)
    if isinstance(model, str) and model.strip():
        return model.strip()[:100]
    info = meta.get(types.CLIENT_INFO_META_KEY)
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        version = info.get("version")
        named = f"{info['name']} {version}" if isinstance(version, str) else info["name"]
        return f"mcp:{named}"[:100]
    return f"mcp:{user_agent or 'unknown client'}"[:100]


def result(text: str, structured: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured, is_error=error
    )


def refused(exc: AppError) -> types.CallToolResult:
    structured: dict[str, Any] = {"status": "failed", "error": exc.detail, "code": exc.status_code}
    if isinstance(exc, CallRefused):
        structured["invocation"] = str(exc.invocation)
    conflicts = getattr(exc, "conflicts", None)
    if conflicts:
        structured["conflicts"] = [str(c) for c in conflicts]
    return result(f"Refused: {exc.detail}", structured, error=True)


def call(
    caller: Caller, name: str, arguments: dict[str, Any] | None, meta: Any
) -> types.CallToolResult:
    """Run the tool `name` for `caller`. A refusal of a service (not found, forbidden, a
    conflict, invalid input) is an error result; an unknown tool too."""
    close_old_connections()
    try:
        return _call(caller, name, arguments or {}, meta or {})
    except AppError as exc:
        return refused(exc)
    finally:
        close_old_connections()


def _call(caller: Caller, name: str, arguments: dict[str, Any], meta: Any) -> Any:
    own = OWN.get(name)
    if own is None:
        return write(caller, name, arguments, meta)
    problem = Tool.validate(own, arguments)  # the schema the listing states
    if problem:
        return result(
            f"Invalid input: {problem}", {"status": "failed", "error": problem}, error=True
        )
    return OWN_CALLS[name](caller, **arguments)


def write(caller: Caller, name: str, arguments: dict[str, Any], meta: Any) -> Any:
    """A write tool's call through the audited dispatch, in the turn `_meta` names or the
    caller's agent turn (docs/mcp.md#turns)."""
    turn = meta.get(TURN)
    if turn is not None and (type(turn) is not int or turn < 1):
        return result("Invalid _meta: the turn is a turn id.", {"status": "failed"}, error=True)
    row = agent_call(
        campaign_id=caller.campaign_id,
        turn_id=turn,
        by=caller.user,
        tool_name=name,
        input=arguments,
        model=caller.client,
        source=InvocationOrigin.MCP,
        ip=caller.ip,
    )
    return row_result(caller, row)


def summary_of(caller: Caller, row: ToolInvocation) -> str:
    """The call in its tool's own words (the feed's describer), as the caller may see it."""
    campaign = campaign_get_visible(campaign_id=caller.campaign_id, user=caller.user)
    player = sight_of(campaign=campaign, user=caller.user) is Sight.PLAYER
    fog = fog_read(campaign_id=campaign.pk) if player else None
    return describe(
        row.tool_name,
        row.input,
        names=names_seen(creature_names(campaign=campaign), fog),
        snapshot=row.revert_snapshot,
        post_state=row.post_state,
        fog=fog,
    )


def row_result(caller: Caller, row: ToolInvocation) -> types.CallToolResult:
    """A logged call as the agent reads it: `structuredContent` with `invocation`, `status`,
    `turn`, the tool's `result` and a one-line `summary`; a failed call is an error."""
    summary = summary_of(caller, row)
    structured: dict[str, Any] = {
        "invocation": str(row.pk),
        "status": row.status,
        "turn": row.turn_id,
        "tool": row.tool_name,
        "result": row.result,
        "summary": summary,
    }
    if row.status == Status.FAILED:
        structured["error"] = row.error
        return result(f"Failed: {row.error}", structured, error=True)
    if row.status == Status.AWAITING_APPROVAL:
        structured["preview"] = public_preview(row.preview)
        text = (
            f"Held for approval ({summary}): nothing has changed yet. An approver answers it on "
            f"the campaign page; poll get_invocation {row.pk} or pending_approvals."
        )
        return result(text, structured)
    text = f"Done: {summary}. Invocation {row.pk} in turn {row.turn_id}; undo_invocation undoes it."
    return result(text, structured)


def begin_turn(caller: Caller, *, message: str) -> types.CallToolResult:
    turn = agent_turn_begin(
        campaign_id=caller.campaign_id, by=caller.user, message=message, ip=caller.ip
    )
    return result(f"Turn {turn.pk} begun: the calls that follow join it.", {"turn": turn.pk})


def get_state(caller: Caller) -> types.CallToolResult:
    campaign = campaign_get_visible(campaign_id=caller.campaign_id, user=caller.user)
    state = campaign_state_at_seq(campaign, sight=sight_of(campaign=campaign, user=caller.user))
    return result(f"The campaign's state at event {state.get('seq')}.", state)


def _seen(campaign: Any, caller: Caller, rows: list[ToolInvocation]) -> list[dict[str, Any]]:
    """Log rows as the REST API shows them to this caller (a player's through the fog:
    `audit.selectors.calls_concealed`), each with its tool's one-line summary."""
    rights = viewer_rights(campaign=campaign, user=caller.user)
    concealed = calls_concealed(campaign=campaign, rights=rights, rows=rows)
    return [
        {
            **InvocationSerializer(row, context={"concealed": concealed}).data,
            "summary": HIDDEN_CHANGE
            if row.pk in concealed
            else registry.summary(row.tool_name, row.input),
        }
        for row in rows
    ]


def _rows(caller: Caller, limit: int, **filters: Any) -> list[dict[str, Any]]:
    campaign = campaign_get_visible(campaign_id=caller.campaign_id, user=caller.user)
    rows = list(invocation_list(campaign=campaign, **filters).order_by("-sequence")[:limit])
    return _seen(campaign, caller, rows)


def recent_log(caller: Caller, *, limit: int = LOG_LIMIT) -> types.CallToolResult:
    rows = _rows(caller, limit)
    lines = [f"{r['sequence']}. {r['status']}: {r['summary']} ({r['id']})" for r in rows]
    return result("\n".join(lines) or "The log is empty.", {"invocations": rows})


def pending_approvals(caller: Caller) -> types.CallToolResult:
    rows = _rows(caller, 50, status=Status.AWAITING_APPROVAL)
    lines = [f"{r['summary']} ({r['id']}), expires {r['expires_at']}" for r in rows]
    return result("\n".join(lines) or "No call is waiting for approval.", {"pending": rows})


def get_invocation(caller: Caller, *, invocation_id: str) -> types.CallToolResult:
    campaign = campaign_get_visible(campaign_id=caller.campaign_id, user=caller.user)
    row = invocation_get(campaign=campaign, invocation_id=_uuid(invocation_id))
    data = _seen(campaign, caller, [row])[0]
    summary = data.pop("summary")
    approval = data.get("approval")
    told = f"; approval: {approval['status']}" if approval else ""
    text = f"{summary}: {row.status}{told}."
    return result(text, {"invocation": data})


def undo_invocation(
    caller: Caller, *, invocation_id: str, reason: str = "", cascade: bool = False
) -> types.CallToolResult:
    outcome = invocation_revert(
        campaign_id=caller.campaign_id,
        invocation_id=_uuid(invocation_id),
        user=caller.user,
        reason=reason,
        cascade=cascade,
        ip=caller.ip,
    )
    data = dict(RevertResultSerializer(outcome).data)
    text = "Undone." if outcome.reverted else f"Nothing to undo: {outcome.skip_reason}."
    return result(text, data)


def undo_turn(
    caller: Caller, *, turn_id: int, reason: str = "", cascade: bool = False
) -> types.CallToolResult:
    outcome = turn_undo(
        campaign_id=caller.campaign_id,
        turn_id=turn_id,
        user=caller.user,
        reason=reason,
        cascade=cascade,
        ip=caller.ip,
    )
    data = dict(UndoResultSerializer(outcome).data)
    data["reverted"] = [str(pk) for pk in data["reverted"]]
    return result(f"Turn {turn_id} undone: {len(data['reverted'])} call(s) reverted.", data)


def _uuid(text: str) -> str:
    """An invocation id as the path of the REST API takes it; a malformed one is not found."""
    try:
        return str(ascii_uuid(text))
    except ValueError:
        raise NotFound("No such invocation in this campaign.") from None


OWN_CALLS = {
    "begin_turn": begin_turn,
    "get_state": get_state,
    "recent_log": recent_log,
    "pending_approvals": pending_approvals,
    "get_invocation": get_invocation,
    "undo_invocation": undo_invocation,
    "undo_turn": undo_turn,
}
