"""Dice on the campaign page: the form, players' rolls between the turns in the order they
happened, the GM's inside its turn, and one roll as a fragment for the script to draw."""

import random
import re
from pathlib import Path

from django.contrib.staticfiles import finders
from django.test import Client

from ai_tools import registry
from ai_tools.base import ToolContext
from ai_tools.dice import dice_roll
from audit.services import turn_undo
from tests.conftest import World
from tests.pages.test_campaign_page import gm_turn, page


def feed_of(html: str) -> str:
    return html[html.index('<ol id="feed"') : html.index("</ol>", html.index('<ol id="feed"'))]


def test_the_page_has_a_dice_form(world: World, player_client: Client):
    html = page(player_client, world)
    form = html[
        html.index('<form id="dice"') : html.index("</form>", html.index('<form id="dice"'))
    ]
    assert 'name="formula"' in form and 'maxlength="20"' in form
    assert all(f'value="{mode}"' in form for mode in ("normal", "advantage", "disadvantage"))
    assert 'import "./table/dice.js";' in Path(finders.find("js/table.js")).read_text()


def test_players_rolls_sit_between_the_turns_in_the_order_they_happened(
    world: World, player_client: Client
):
    before = gm_turn(world, "I open the door")
    rolled = dice_roll(
        campaign=world.campaign,
        author=world.other,
        formula="2d6+3",
        mode="advantage",
        rng=random.Random(1),
    )
    after = gm_turn(world, "I step in")
    feed = feed_of(page(player_client, world))
    order = [feed.index(f'data-turn="{before.pk}"'), feed.index(f'data-roll="{rolled.pk}"')]
    assert order == sorted(order) and order[1] < feed.index(f'data-turn="{after.pk}"')
    entry = feed[feed.index(f'data-roll="{rolled.pk}"') :]
    entry = entry[: entry.index("</li>")]
    dice = "".join(f'<span class="die">{die}</span>' for die in rolled.dice)
    discarded = "".join(f'<span class="die">{die}</span>' for die in rolled.discarded)
    assert '<span class="author">other</span>' in entry
    assert '<span class="formula">2d6+3</span> <span class="mode">with advantage</span>' in entry
    assert f'<span class="dice">{dice}</span>' in entry
    assert f'title="The other roll, not kept">{discarded}</span>' in entry
    assert (
        f'<span class="modifier">+3</span> = <strong class="total">{rolled.total}</strong>' in entry
    )


def test_the_gms_roll_shows_inside_its_turn_and_leaves_with_it_when_undone(
    world: World, player_client: Client
):
    turn = gm_turn(world, "I pick the lock")
    registry.read_tool("roll_dice").run(
        ToolContext(world.campaign, world.player, turn), {"expression": "d20+5"}
    )
    html = page(player_client, world)
    block = html[html.index(f'data-turn="{turn.pk}"') :]
    block = block[: block.index("</li>")]
    assert re.search(
        r'<div class="roll ai" data-roll="\d+">\s*<span class="author">Game Master', block
    )
    assert '<span class="modifier">+5</span>' in block

    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    assert 'class="roll' not in feed_of(page(player_client, world))


def test_one_roll_is_served_as_the_fragment_the_script_draws(world: World, player_client: Client):
    base = f"/campaigns/{world.campaign.pk}/feed/"
    mine = dice_roll(campaign=world.campaign, author=world.player, formula="d6")
    turn = gm_turn(world, "I search")
    registry.read_tool("roll_dice").run(
        ToolContext(world.campaign, world.player, turn), {"expression": "d8"}
    )
    gms = turn.rolls.get()

    standalone = player_client.get(base, {"roll": mine.pk}).content.decode()
    assert standalone.startswith(f'<li class="roll-entry"><div class="roll" data-roll="{mine.pk}">')
    inside = player_client.get(base, {"roll": gms.pk}).content.decode()
    assert inside.startswith(f'<div class="roll ai" data-roll="{gms.pk}">')

    foreign = dice_roll(campaign=world.foreign.campaign, author=world.outsider, formula="d6")
    for value in (foreign.pk, "abc", "²", str(10**30), mine.pk + 1000):
        assert player_client.get(base, {"roll": value}).status_code == 404, value


def test_roll_authors_are_escaped(world: World, player_client: Client):
    world.other.username = "<b>bold</b>"
    world.other.save()
    dice_roll(campaign=world.campaign, author=world.other, formula="d6")
    html = feed_of(page(player_client, world))
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
