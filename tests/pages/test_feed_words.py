"""A feed that tells the story (issue 25): every change reads in words on the page — a token
dragged, a creature the GM adds, a change by the GM's own hand ("owner: Thorin heals 4 HP
(20 → 24)") — and nobody reads an internal name or a Python repr: not a tool's or an item's
snake_case name (`healing_potion`), not a list (`['dead']`), not a model's id (`scripted/1`).
The sweep reads the whole page as the GM sees it (folded details closed) and as a player sees
it (every detail opened: what a player is sent is theirs to read)."""

import pytest

from audit.models import InvocationOrigin
from audit.services import turn_undo
from audit.services.hand import hand_call, token_move
from campaigns.models import Campaign
from tests.conftest import World, call, commit, fog_over_the_goblin, signed_in
from tests.pages.readable import internal_words, visible_text
from tests.pages.test_history_on_page import gm_turn

MODEL = "scripted/1"


def played(world: World) -> None:
    """A short evening at the table: the GM's calls of many tools in the player's turns, one
    undone, one refused, one held; the GM's own hand; a token dragged by its player."""
    w = world
    turn = gm_turn(w, "We go down.")
    for tool, data in (
        ("set_scene", {"description": "Water drips in the dark.", "location": "Crypt"}),
        ("activate_dungeon", {"dungeon_id": w.dungeon.pk}),
        ("advance_chapter", {}),
        ("spawn_creature", {"name": "Skeleton", "kind": "monster", "hp": 13, "x": 3, "y": 4}),
        ("reveal_fog", {"cells": [[0, 0], [1, 1], [2, 1], [3, 4], [5, 5]]}),
        ("write_memory", {"content": "The mayor lies.", "key": "mayor_secret"}),
    ):
        commit(w, tool, data, turn=turn, model=MODEL)
    fight = gm_turn(w, "I attack the goblin!")
    initiative = {str(w.hero.pk): 17, str(w.goblin.pk): 12}
    for tool, data in (
        ("start_combat", {"creature_ids": [w.hero.pk, w.goblin.pk], "initiative": initiative}),
        ("modify_creature", {"creature_id": w.goblin.pk, "hp_delta": -7}),
        ("modify_creature", {"creature_id": w.goblin.pk, "add_conditions": ["dead", "prone"]}),
        ("advance_turn", {}),
        ("give_item", {"creature_id": w.hero.pk, "item": "healing_potion", "quantity": 2}),
        ("consume_resource", {"creature_id": w.hero.pk, "resource": "spell_slot", "amount": 1}),
        ("end_combat", {}),
        ("rest", {"kind": "short"}),
    ):
        commit(w, tool, data, turn=fight, model=MODEL)
    call(
        w, "give_item", {"creature_id": w.ally.pk, "item": "gold_coin", "quantity": -5}, turn=fight
    )
    undone = gm_turn(w, "I jump into the well.")
    commit(w, "modify_creature", {"creature_id": w.hero.pk, "hp_delta": -6}, turn=undone)
    turn_undo(campaign_id=w.campaign.pk, turn_id=undone.pk, user=w.owner, reason="misread")
    hand_call(
        campaign=w.campaign,
        by=w.owner,
        tool_name="modify_creature",
        input={"creature_id": w.hero.pk, "hp_delta": 4},
    )
    token_move(campaign=w.campaign, creature=w.hero, by=w.player, x=2, y=2)
    Campaign.objects.filter(pk=w.campaign.pk).update(approval_policy="critical")
    held = gm_turn(w, "I finish it.")
    call(
        w,
        "end_adventure",
        {"summary": "The keep is cleansed.", "achievements": ["keep_cleansed"]},
        turn=held,
        source=InvocationOrigin.GM,
        model=MODEL,
    )


def page(world: World, user, path: str = "") -> str:
    response = signed_in(user).get(f"/campaigns/{world.campaign.pk}/{path}")
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("path", ["", "feed/", "approvals/", "board/"])
def test_no_internal_name_or_repr_reaches_the_page(world: World, path: str):
    played(world)
    gm = visible_text(page(world, world.owner, path))
    assert internal_words(gm) == [], gm
    player = visible_text(page(world, world.player, path), open_details=True)
    assert internal_words(player) == [], player


def test_the_feed_tells_each_change_in_words(world: World):
    played(world)
    seen = visible_text(page(world, world.player, "feed/"))
    for words in (
        "The scene moves to Crypt: Water drips in the dark.",
        "The party enters Flooded Crypt",
        "The story moves on: Arrival → Depths",
        "Skeleton appears at 3,4: a monster with 13 HP",
        "5 map cells revealed",
        "Combat starts: Thorin 17, Goblin 12 — in that order",
        "Goblin takes 7 damage (7 → 0)",
        "Goblin is now dead and prone",
        "Thorin gets 2 × healing potion (0 → 2)",
        "Thorin uses 1 × spell slot (1 → 0 left)",
        "Combat ends after 1 round",
        "owner: Thorin heals 4 HP (20 → 24)",  # the GM's own hand says who
        "player Thorin moves from 1,1 to 2,2",  # a token dragged: an entry of its own
        "owner adds Goblin: a monster with 7 HP",  # the set-up's creatures too
        "owner adds Thorin: a player character with 24 HP",
    ):
        assert words in seen, words
    assert "adjusts the table by hand" not in seen


def test_the_undo_dialog_reads_in_words_too(world: World):
    played(world)
    from campaigns.models import Turn

    fight = Turn.objects.get(campaign=world.campaign, messages__content="I attack the goblin!")
    plan = visible_text(
        page(world, world.player, f"undo-plan/?turn={fight.pk}&cascade=1"), open_details=True
    )
    assert "Thorin gets 2 × healing potion" in plan
    assert internal_words(plan) == [], plan


def test_a_player_is_not_told_of_a_foe_added_in_the_fog(world: World):
    fog_over_the_goblin(world)
    assert "adds Goblin" not in visible_text(page(world, world.player, "feed/"))
    assert "owner adds Goblin: a monster" in visible_text(page(world, world.owner, "feed/"))
    response = signed_in(world.player).get(
        f"/campaigns/{world.campaign.pk}/feed/?added={world.goblin.pk}"
    )
    assert response.status_code == 404
    shown = page(world, world.player, f"feed/?added={world.orc.pk}")
    assert 'data-change="added-' in shown and "owner adds Orc" in visible_text(shown)


def test_a_dragged_token_is_one_entry_undone_in_place(world: World):
    row = token_move(campaign=world.campaign, creature=world.hero, by=world.player, x=2, y=2)
    entry = page(world, world.owner, f"feed/?change={row.pk}")
    assert visible_text(entry).startswith("player Thorin moves from 1,1 to 2,2")
    from audit.services import invocation_revert

    invocation_revert(campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.player)
    assert "undone" in visible_text(page(world, world.owner, f"feed/?change={row.pk}"))
    missing = signed_in(world.owner).get(f"/campaigns/{world.campaign.pk}/feed/?change=nope")
    assert missing.status_code == 404
