"""Cards a GM can judge, for every tool (docs/architecture.md#human-in-the-loop): each declared
example of each registered tool, held for approval as the GM's call on a player's turn, reads
on its card in its tool's own words — names, not ids, and what changes, before → after — with
the raw fields folded behind "Details" for those who run the table. The visible text holds no
id, UUID, internal name or Python repr, for the GM and for the player alike."""

import pytest

from ai_tools import registry
from audit.models import InvocationOrigin, ToolInvocation
from campaigns.selectors import creature_names
from tests.ai_tools.examples import example_cases, example_input
from tests.conftest import World, call, signed_in
from tests.pages.readable import internal_words, visible_text
from web.pages.changes import named_summary

MODEL = "anthropic/claude-sonnet-4-5"


@pytest.fixture
def hold_every_call(monkeypatch):
    """Every GM call waits for a person, whatever its tier (the policy's own words for why):
    so each tool's card can be drawn."""

    def held(campaign, tool, model, **_context):
        return f"{tool.name} is a {tool.tier} tool, and this table approves {tool.tier} calls."

    def start() -> None:
        monkeypatch.setattr("audit.services.dispatch.needs_approval", held)

    return start


def held_call(world: World, tool_name: str, data: dict) -> ToolInvocation:
    row = call(
        world,
        tool_name,
        data,
        actor=world.player,
        turn=world.turn(world.player, "I press on."),
        source=InvocationOrigin.GM,
        model=MODEL,
    )
    assert row.status == ToolInvocation.Status.AWAITING_APPROVAL, row.error
    return row


def card_html(world: World, user) -> str:
    response = signed_in(user).get(f"/campaigns/{world.campaign.pk}/approvals/")
    assert response.status_code == 200
    return response.content.decode()


def named_in(data: dict) -> list[int]:
    ids = [data["creature_id"]] if "creature_id" in data else []
    return ids + list(data.get("creature_ids", []))


@pytest.mark.parametrize(("tool_name", "index"), example_cases())
def test_every_tools_card_reads_in_words_without_ids_or_reprs(
    world: World, hold_every_call, tool_name: str, index: int
):
    tool = registry.write_tool(tool_name)
    data = example_input(world, tool, index)
    hold_every_call()
    held_call(world, tool_name, data)
    names = creature_names(campaign=world.campaign)

    gm_card = card_html(world, world.owner)
    seen = visible_text(gm_card)
    assert internal_words(seen) == [], seen
    # The describer's words, not the one-line summary the card used to show.
    assert f"Waiting for approval: {named_summary(tool_name, data, names)} " not in seen
    for pk in named_in(data):
        assert names[pk] in seen
    # The raw fields are there, folded: the tool's name and the input as the log holds it.
    raw = visible_text(gm_card, open_details=True)
    assert tool_name in raw and "input" in raw

    player_card = card_html(world, world.player)
    assert internal_words(visible_text(player_card, open_details=True)) == []
    assert "approval-raw" not in player_card and f">{tool_name}<" not in player_card


def test_start_combat_reads_as_the_turn_order_it_makes(world: World, hold_every_call):
    hold_every_call()
    ids = [world.goblin.pk, world.hero.pk, world.ally.pk]
    initiative = {str(world.hero.pk): 20, str(world.ally.pk): 18, str(world.goblin.pk): 12}
    held_call(world, "start_combat", {"creature_ids": ids, "initiative": initiative})
    seen = visible_text(card_html(world, world.owner))
    assert "Combat starts: Thorin 20, Lia 18, Goblin 12 — in that order" in seen


def test_a_hit_shows_the_hp_before_and_after_and_the_reason_in_words(world: World, hold_every_call):
    hold_every_call()
    held_call(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -4})
    seen = visible_text(card_html(world, world.player))
    assert "Waiting for approval: Goblin takes 4 damage (7 → 3)" in seen
    assert "Modify creature is a critical tool" in seen
    assert "Details" not in seen  # the raw fields are the GM's
