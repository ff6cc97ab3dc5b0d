"""Every write tool says what a call of it did in its own words (`WriteTool.describe`, in its
class), and the feed reaches them through the one generic renderer (`web.pages.changes`): each
declared example of each registered tool, committed, reads in the feed as its describer says,
creatures named, and not as the summary the renderer falls back on. A tool without a describer
of its own, or one that cannot read its own examples, fails here."""

import html
import re

import pytest

from ai_tools import entities, registry
from ai_tools.base import Names
from campaigns.selectors import creature_names, world_labels
from tests.ai_tools.examples import example_cases, example_input
from tests.conftest import World, commit, signed_in
from tests.pages.test_history_on_page import fragment, gm_turn, summaries
from web.pages.changes import named_summary


@pytest.mark.parametrize(("tool_name", "index"), example_cases())
def test_each_example_reads_in_its_tools_own_words(world: World, tool_name: str, index: int):
    tool = registry.write_tool(tool_name)
    data = example_input(world, tool, index)
    turn = gm_turn(world, "Do it")
    row = commit(world, tool_name, data, turn=turn)
    names = creature_names(campaign=world.campaign)
    lines = tool.describe(
        data,
        before=entities.snapshot_map(row.revert_snapshot),
        after=entities.logged_map(row.post_state),
        name=Names(names, world_labels(campaign_id=world.campaign.pk)),
    )
    (shown,) = summaries(fragment(signed_in(world.owner), world, turn))
    words = html.unescape(shown)
    assert lines and words == "; ".join(lines)
    assert words != named_summary(tool_name, data, names)
    assert not re.search(r"\bcreatures? \d", words)
