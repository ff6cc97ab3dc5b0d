"""The GM's own hand: the owner or a co-GM changing the table themselves during play.

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
from campaigns.models import Campaign
from campaigns.services import turn_create
from core.errors import InvalidInput

# The hand turn's message: what the feed shows above the call (the call's card says what).
HAND_MESSAGE = "adjusts the table by hand"


def hand_call(*, campaign: Campaign, gm: Any, tool_name: str, input: Any) -> ToolInvocation:
    """Run one write tool as `gm`'s own hand, in a new turn of theirs. Input the tool's schema
    refuses is refused here, before any turn exists (the dispatch would refuse it the same
    way, with a failed row); a tool error still leaves its failed row in the hand turn."""
    tool = registry.write_tool(tool_name)
    problem = tool.validate(input)
    if problem:
        raise InvalidInput(f"Invalid input: {problem}")
    turn = turn_create(campaign=campaign, actor=gm, message=HAND_MESSAGE)
    return invocation_dispatch(
        campaign=campaign,
        actor=gm,
        tool_name=tool_name,
        input=input,
        turn=turn,
        source=InvocationOrigin.USER,
    )
