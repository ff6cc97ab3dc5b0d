"""An agent's tool call: a person's agent (a REST client, an MCP client) running a write tool in
a turn, through the audited dispatch; and the agent's turns, its units of work.

Every surface that lets an agent call tools calls this one service, and so inherits every rule
without copying one: who sees the campaign, who may post into the turn (its actor or the owner,
`campaigns.permissions.require_tool_caller`, a refusal recorded as `tool_call_denied`), the
caller's least privilege and the log (`audit.services.invocation_dispatch`: logged before it
mutates, undoable).

An agent's turn (docs/mcp.md#turns) is a turn of its own person posted without the GM (status
`open`): `agent_turn_begin` opens one with a message; a call that names no turn joins the caller's
latest open turn while it is live (not undone, a call or its opening within MCP_TURN_IDLE
seconds), else opens a new one. So "undo this turn" undoes the agent's unit of work, and its
calls never land in another person's turn unless the caller names it.
"""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from audit.models import InvocationOrigin, ToolInvocation
from audit.services.dispatch import invocation_dispatch
from campaigns.models import Campaign, Turn
from campaigns.permissions import require_member, require_tool_caller
from campaigns.security import recording_denials
from campaigns.selectors import campaign_get_visible, turn_get
from campaigns.services import turn_create

AGENT_TURN_MESSAGE = "{client} acts."


def agent_call(
    *,
    campaign_id: Any,
    turn_id: Any,
    by: Any,
    tool_name: str,
    input: Any,
    model: str = "",
    source: InvocationOrigin = InvocationOrigin.API,
    ip: str | None = None,
) -> ToolInvocation:
    """Run `tool_name` in the turn `turn_id` as the turn's actor, asked by `by`: a campaign they
    do not see and a turn of another campaign are NotFound; anyone but the turn's actor or the
    owner is refused (Forbidden, recorded from `ip`). A `turn_id` of None is the caller's own
    agent turn (`agent_turn_current`, named by `model`). The call has `by`'s powers
    (docs/tools.md#who-may-call-what); the row is the dispatch's (committed, held for approval,
    or failed), with the origin `source`."""
    campaign = campaign_get_visible(campaign_id=campaign_id, user=by)
    if turn_id is None:
        turn = agent_turn_current(campaign=campaign, by=by, client=model, ip=ip)
    else:
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
        source=source,
        requested_by=by,
        ip=ip,
    )


def agent_turn_begin(*, campaign_id: Any, by: Any, message: str, ip: str | None = None) -> Turn:
    """Open a new agent turn for `by` with `message` (a member only: a refusal is recorded from
    `ip`): the calls that follow join it, and undoing it undoes them all. Durable."""
    campaign = campaign_get_visible(campaign_id=campaign_id, user=by)
    return _turn_open(campaign=campaign, by=by, message=message, ip=ip)


def agent_turn_current(
    *, campaign: Campaign, by: Any, client: str = "", ip: str | None = None
) -> Turn:
    """`by`'s live agent turn in `campaign`: their latest open turn, unless it was undone or
    has been idle (no call, or its opening) for MCP_TURN_IDLE seconds; else a new one, whose
    message names the `client`."""
    latest = (
        Turn.objects.filter(
            campaign=campaign, actor=by, status=Turn.Status.OPEN, reverted_at__isnull=True
        )
        .annotate(last_call=Max("invocations__created_at"))
        .order_by("-created_at", "-pk")
        .first()
    )
    if latest is not None:
        active = max(latest.created_at, latest.last_call or latest.created_at)
        if timezone.now() - active < timedelta(seconds=settings.MCP_TURN_IDLE):
            return latest
    message = AGENT_TURN_MESSAGE.format(client=client or "An agent")
    return _turn_open(campaign=campaign, by=by, message=message, ip=ip)


def _turn_open(*, campaign: Campaign, by: Any, message: str, ip: str | None) -> Turn:
    with recording_denials(user=by, ip=ip):
        require_member(campaign=campaign, user=by, action="turn_create")
    with transaction.atomic(durable=True):
        return turn_create(campaign=campaign, actor=by, message=message)
