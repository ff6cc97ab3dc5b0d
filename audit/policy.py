"""Which tool calls wait for a human, and why: the campaign's policy, the tool's tier and, under
the `adaptive` policy, how often the model's recent calls of that tool were undone.

Pure reads: nothing here pauses a call. The reason returned is what the approval card, the API
and the admin show ("modify_creature by claude-sonnet-4-5: 6 of its last 20 calls were undone").
"""

import functools
from typing import Any

from django.conf import settings
from django.db import connection

from ai_tools.base import Reach, Tier, ToolContext, ToolError, WriteTool
from audit.analytics import RAN
from audit.models import ToolInvocation
from campaigns.models import Campaign, Creature

Policy = Campaign.ApprovalPolicy
Status = ToolInvocation.Status
# The tiers each policy holds back whatever the model's record.
HELD_TIERS = {
    Policy.NONE: frozenset(),
    Policy.CRITICAL: frozenset({Tier.CRITICAL}),
    Policy.CRITICAL_AND_HIGH: frozenset({Tier.CRITICAL, Tier.HIGH}),
    Policy.ADAPTIVE: frozenset({Tier.CRITICAL}),
    Policy.WATCHFUL: frozenset(),
}
# The policies that also hold a (model, tool) pair whose recent calls keep being undone.
LEARNING = frozenset({Policy.ADAPTIVE, Policy.WATCHFUL})
# Under `watchful`, the tools held whatever they act on: what cannot be taken back at the table
# (an undo restores the rows, not the evening the group thought was over).
ALWAYS_HELD = frozenset({"end_adventure"})


def needs_approval(
    campaign: Campaign,
    tool: WriteTool,
    model: str,
    *,
    ctx: ToolContext | None = None,
    data: Any = None,
) -> str | None:
    """Why this call must wait for a human under the campaign's policy, or None if it runs at
    once: its tier first; under `watchful` the tools always held, then a critical call on a
    player's character (`ctx` and `data` name its targets: read through the context, which
    the tool reuses, so this costs no statement of its own); then (under `adaptive` and
    `watchful`) its model's record with this tool."""
    policy = campaign.approval_policy
    if tool.tier in HELD_TIERS[policy]:
        return f"{tool.name} is a {tool.tier} tool, and this table approves {tool.tier} calls."
    if policy == Policy.WATCHFUL:
        if tool.name in ALWAYS_HELD:
            return f"{tool.name} cannot be taken back at the table: this table always approves it."
        pc = _player_character_hit(tool, ctx, data)
        if pc is not None:
            return (
                f"{tool.name} is a critical call on {pc}, a player's character: this table "
                "approves those, and their player may object."
            )
    return adaptive_approval_reason(campaign, model, tool.name)


def _player_character_hit(tool: WriteTool, ctx: ToolContext | None, data: Any) -> str | None:
    """The name of the first player character a critical call acts on (the creatures its
    `targets` names, for a tool whose reach names them), or None."""
    if ctx is None or tool.tier != Tier.CRITICAL or tool.reach is not Reach.OWN_CHARACTER:
        return None
    try:
        targets = tool.targets(ctx, data)
    except ToolError:  # an id of no creature here: the call runs, and fails, as it would
        return None
    return next((c.name for c in targets if c.kind == Creature.Kind.PC), None)


def adaptive_approval_reason(campaign: Campaign, model: str, tool_name: str) -> str | None:
    """Under `adaptive` and `watchful`: the reason, if at least APPROVAL_ADAPTIVE_THRESHOLD of
    the pair's last APPROVAL_ADAPTIVE_WINDOW calls that ran (committed, some since reverted)
    were undone, else None, so it relaxes by itself as undone calls fall out of the window. The
    window is the campaign's while it holds that many such calls, else the pair's record across
    campaigns; a pair with fewer calls than the window anywhere counts the missing ones as not
    undone, so a new model is not held back for its first undo. Two index range scans at
    most."""
    if campaign.approval_policy not in LEARNING:
        return None
    window = settings.APPROVAL_ADAPTIVE_WINDOW
    recent = _last_here(model, tool_name, campaign.pk, window)
    where = ""
    if len(recent) < window:
        recent = _last_anywhere(model, tool_name, window)
        where = " across all tables"
    undone = recent.count(Status.REVERTED)
    if undone / window < settings.APPROVAL_ADAPTIVE_THRESHOLD:
        return None
    return (
        f"{tool_name} by {display_model(model)}: {undone} of its last {len(recent)} calls"
        f"{where} were undone"
    )


def _last_here(model: str, tool_name: str, campaign_id: Any, window: int) -> list[str]:
    # Plain SQL: a hot read (every GM call under the default policy, `watchful`).
    params = [model, tool_name, *RAN, campaign_id, window]
    return [status for (status,) in _fetch(_last_sql(here=True), params)]


def _last_anywhere(model: str, tool_name: str, window: int) -> list[str]:
    # Plain SQL: a hot read (a GM call of a pair with too few calls here, under `watchful`).
    params = [model, tool_name, *RAN, window]
    return [status for (status,) in _fetch(_last_sql(here=False), params)]


def _fetch(sql: str, params: list[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@functools.cache
def _last_sql(*, here: bool) -> str:
    """The statuses of the pair's last calls that ran: in the campaign, by the log's order;
    else across campaigns, by when they committed."""
    quote, meta = connection.ops.quote_name, ToolInvocation._meta

    def c(name: str) -> str:
        return quote(meta.get_field(name).column)

    where = f"{c('model')} = %s AND {c('tool_name')} = %s AND {c('status')} IN (%s, %s)"
    if here:
        where += f" AND {c('campaign')} = %s"
    order = c("sequence") if here else c("committed_at")
    return (
        f"SELECT {c('status')} FROM {quote(meta.db_table)} WHERE {where} "
        f"ORDER BY {order} DESC LIMIT %s"
    )


def display_model(model: str) -> str:
    """A stored model (`anthropic/claude-sonnet-4-5`) as people name it; blank is a person."""
    return model.rsplit("/", 1)[-1] or "an unnamed model"
