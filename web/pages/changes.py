"""A logged tool call in people's words, for the feed, the undo dialog, the approval card and
the admin. The words are each tool's own, in its class (`WriteTool.describe`, `summarize`):
this only picks the tool, hands it what the call wrote before (the revert snapshot) and after
(the post-state) and the creatures' names as the reader may see them, and falls back on the
tool's summary, creatures named, where the describer cannot read the row. For a player, a call
that tells of a creature the fog hides reads only that something happens in the fog
(`campaigns.visibility`), and the names given for hidden creatures are "Someone unseen".
"""

from typing import Any

from ai_tools import entities, registry
from ai_tools.base import Names
from audit.selectors import call_concealed
from campaigns.visibility import HIDDEN_CHANGE, Fog
from core.errors import InvalidInput

# What a describer raises on input it cannot read (a failed call's, an old row's).
UNREADABLE = (KeyError, TypeError, ValueError, AttributeError)


def describe(
    tool_name: str,
    data: Any,
    *,
    names: dict[int, str],
    snapshot: Any = None,
    post_state: Any = None,
    fog: Fog | None = None,
) -> str:
    """One call in its tool's words, from its logged `revert_snapshot` and `post_state` (either
    may be missing: a failed or pending call). With a player's `fog`, a call that tells of a
    hidden creature is HIDDEN_CHANGE."""
    if call_concealed(data, post_state, fog):
        return HIDDEN_CHANGE
    lines = _described(tool_name, data, Names(names), snapshot, post_state)
    return "; ".join(lines) if lines else named_summary(tool_name, data, names)


def _described(
    tool_name: str, data: Any, names: Names, snapshot: Any, post_state: Any
) -> list[str]:
    """The tool's describer's lines; none for a tool since removed or input it cannot read."""
    try:
        tool = registry.write_tool(tool_name)
    except InvalidInput:
        return []
    if not isinstance(data, dict):
        return []
    before, after = entities.snapshot_map(snapshot), entities.logged_map(post_state)
    try:
        return tool.describe(data, before=before, after=after, name=names)
    except UNREADABLE:
        return []


def named_summary(tool_name: str, data: Any, names: dict[int, str]) -> str:
    """The tool's one-line summary with creatures named ("Goblin: HP -5"), as the approval card
    and the admin show a call; a tool since removed is named only."""
    return Names(names).in_text(registry.summary(tool_name, data))
