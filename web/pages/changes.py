"""A logged tool call in people's words, for the feed, the undo dialog, the approval card and
the admin. The words are each tool's own, in its class (`WriteTool.describe`, `summarize`):
this only picks the tool, hands it what the call wrote before (the revert snapshot) and after
(the post-state) and the creatures' names as the reader may see them, and falls back on the
tool's summary, creatures named, where the describer cannot read the row. For a player, a call
that tells of a creature the fog hides reads only that something happens in the fog
(`campaigns.visibility`), and the names given for hidden creatures are "Someone unseen".
"""

import re
from typing import Any

from ai_tools import entities, registry
from ai_tools.base import EntityMap, Names
from ai_tools.tools.words import spoken
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
    labels: dict[str, str] | None = None,
) -> str:
    """One call in its tool's words, from its logged `revert_snapshot` and `post_state` (either
    may be missing: a failed or pending call), creatures named by `names`, chapters and
    dungeons by `labels` (`campaigns.selectors.world_labels`). With a player's `fog`, a call
    that tells of a hidden creature is HIDDEN_CHANGE."""
    if call_concealed(data, post_state, fog):
        return HIDDEN_CHANGE
    before, after = entities.snapshot_map(snapshot), entities.logged_map(post_state)
    lines = described(tool_name, data, reader_names(names, labels, fog), before, after)
    return "; ".join(lines) if lines else named_summary(tool_name, data, names)


def reader_names(names: dict[int, str], labels: dict[str, str] | None, fog: Fog | None) -> Names:
    """The names a reader is given for a call's words: creatures (as `names` has them seen),
    chapters and dungeons, and, for a player, where a creature stood only if the fog would not
    hide it there (`Fog.hides`; a creature or cell the facts do not cover counts as hidden)."""
    if fog is None or not fog.in_play:
        return Names(names, labels or {})

    def sees(pk: Any, x: Any, y: Any) -> bool:
        kind = fog.creatures.get(pk, ("",))[0] if isinstance(pk, int) else ""
        return not fog.hides(kind, (x, y))

    return Names(names, labels or {}, sees=sees)


def described(
    tool_name: str, data: Any, names: Names, before: EntityMap, after: EntityMap
) -> list[str]:
    """The tool's describer's lines; none for a tool since removed or input it cannot read."""
    try:
        tool = registry.write_tool(tool_name)
    except InvalidInput:
        return []
    if not isinstance(data, dict) or tool.validate(data):
        return []
    try:
        return [line for line in tool.describe(data, before=before, after=after, name=names)]
    except UNREADABLE:
        return []


def held_maps(preview: Any) -> tuple[EntityMap, EntityMap]:
    """A held call's before and after as its preview tells them (`audit.services.preview`):
    `before` as stored, `after` the same rows with the diff's new values, and the rows the
    diff makes from nothing, so its tool's describer reads a call that waits as one that ran."""
    if not isinstance(preview, dict):
        return {}, {}
    before = entities.logged_map(preview.get("before"))
    after: EntityMap = {k: dict(v) if v is not None else None for k, v in before.items()}
    diff = preview.get("diff")
    for change in diff if isinstance(diff, list) else []:
        if not isinstance(change, dict) or not {"entity", "id", "field"} <= change.keys():
            continue
        whole = entities.key(change["entity"], change["id"])
        keys = [k for k in before if entities.root(k) == whole] or [whole]
        for k in keys:
            if not entities.readable(k):
                continue
            fields = after.get(k)
            if fields is None:
                if change.get("after") is None:
                    continue
                fields = after[k] = {}
            if change["field"] in fields or k == whole:
                fields[change["field"]] = change.get("after")
    return before, after


def named_summary(tool_name: str, data: Any, names: dict[int, str]) -> str:
    """The tool's one-line summary with creatures named ("Goblin: HP -5"), as the approval card
    and the admin show a call; a tool since removed is named only."""
    return Names(names).in_text(registry.summary(tool_name, data))


def in_words(text: str) -> str:
    """A sentence the log wrote for people (an approval's reason: "modify_creature is a
    critical tool, …") with each tool's name as people say it ("modify creature")."""
    names = "|".join(re.escape(tool.name) for tool in registry.write_tools())
    said = re.sub(rf"\b(?:{names})\b", lambda m: spoken(m[0]), text) if names else text
    return said[:1].upper() + said[1:]
