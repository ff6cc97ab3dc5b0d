"""A person's own hand on the table: the GM's (the owner or a co-GM changing the table
themselves during play), and anyone's drag of a token on the map. Both check who may here
(`campaigns.permissions`), record a refusal, and go through the audited dispatch with the origin
`user`.

A hand call is a tool call like the AI's: it goes through the audited dispatch, so it is logged
before it mutates, broadcast, and undoable by the same revert services. Each one opens a turn
of its own whose actor is the person (docs/architecture.md#the-log-row: `user` is whose turn it is;
`requested_by` stays empty, since nobody acts for anyone else). So the log says who did it, the feed
shows it as an entry of its own, and undoing it is undoing that turn: it never takes the AI's
changes of a player's turn with it, and undoing a player's turn never takes it either.
"""

from typing import Any

from ai_tools import registry
from audit.models import InvocationOrigin, ToolInvocation
from audit.services.dispatch import invocation_dispatch
from campaigns.models import Campaign, Creature
from campaigns.permissions import require_gm, require_may_move_token
from campaigns.security import recording_denials
from campaigns.services import turn_create
from core.errors import InvalidInput

# The hand turn's message: what the feed shows above the call (the call's card says what).
HAND_MESSAGE = "adjusts the table by hand"


def hand_call(
    *, campaign: Campaign, by: Any, tool_name: str, input: Any, ip: str | None = None
) -> ToolInvocation:
    """Run one write tool as `by`'s own hand, in a new turn of theirs: the owner's or a co-GM's
    (`require_gm`; a refusal is recorded from `ip`). Input the tool's schema refuses is refused
    here, before any turn exists (the dispatch would refuse it the same way, with a failed row);
    a tool error still leaves its failed row in the hand turn."""
    with recording_denials(user=by, ip=ip):
        require_gm(campaign=campaign, user=by, action="hand_call")
    tool = registry.write_tool(tool_name)
    problem = tool.validate(input)
    if problem:
        raise InvalidInput(f"Invalid input: {problem}")
    turn = turn_create(campaign=campaign, actor=by, message=HAND_MESSAGE)
    return invocation_dispatch(
        campaign=campaign,
        actor=by,
        tool_name=tool_name,
        input=input,
        turn=turn,
        source=InvocationOrigin.USER,
    )


def token_move(
    *, campaign: Campaign, creature: Creature, by: Any, x: int, y: int, ip: str | None = None
) -> ToolInvocation:
    """`by` drags `creature`'s token to (x, y) (docs/api.md#moving-a-token): a player their own
    PC, the owner and the co-GMs any (`require_may_move_token`; a refusal is recorded from
    `ip`), onto a cell of the campaign's grid (beyond it: InvalidInput, 400, no row). The
    `move_token` tool with the origin `user`, so the move is logged and undoable like
    the GM's calls; it joins no turn, being nobody's message to the GM."""
    with recording_denials(user=by, ip=ip):
        require_may_move_token(campaign=campaign, user=by, creature=creature)
    if x >= campaign.map_cols or y >= campaign.map_rows:
        raise InvalidInput(
            f"{x},{y} is off the map: it is {campaign.map_cols} columns by "
            f"{campaign.map_rows} rows (0,0 to {campaign.map_cols - 1},{campaign.map_rows - 1})."
        )
    return invocation_dispatch(
        campaign=campaign,
        actor=by,
        tool_name="move_token",
        input={"creature_id": creature.pk, "x": x, "y": y},
        source=InvocationOrigin.USER,
    )
