"""An agent's tool call: a person's agent (a REST client today, an MCP client next) running a
write tool in a turn, through the audited dispatch.

Every surface that lets an agent call tools calls this one service, and so inherits every rule
without copying one: who sees the campaign, who may post into the turn (its actor or the owner,
`campaigns.permissions.require_tool_caller`, a refusal recorded as `tool_call_denied`), the
caller's least privilege and the log (`audit.services.invocation_dispatch`: logged before it
mutates, undoable).
"""

from typing import Any

from audit.models import InvocationOrigin, ToolInvocation
from audit.services import invocation_dispatch
from campaigns.permissions import require_tool_caller
from campaigns.security import recording_denials
from campaigns.selectors import campaign_get_visible, turn_get


def agent_call(
    *,
    campaign_id: Any,
    turn_id: Any,
    by: Any,
    tool_name: str,
    input: Any,
    model: str = "",
    ip: str | None = None,
) -> ToolInvocation:
    """Run `tool_name` in the turn `turn_id` as the turn's actor, asked by `by`: a campaign they
    do not see and a turn of another campaign are NotFound; anyone but the turn's actor or the
    owner is refused (Forbidden, recorded from `ip`). The call has `by`'s powers
    (docs/tools.md#who-may-call-what); the row is the dispatch's (committed, held for approval,
    or failed)."""
    campaign = campaign_get_visible(campaign_id=campaign_id, user=by)
    turn = turn_get(campaign=campaign, turn_id=turn_id)
    with recording_denials(user=by, ip=ip):
        require_tool_caller(campaign=campaign, user=by, turn=turn)
    return invocation_dispatch(
        campaign=campaign,
        actor=turn.actor,
        tool_name=tool_name,
        input=input,
        turn=turn,
        model=model,
        source=InvocationOrigin.API,
        requested_by=by,
        ip=ip,
    )
