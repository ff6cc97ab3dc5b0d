"""The campaign page: the board, the feed, Undo on the right turn, and members only."""

import json
import re
import uuid

from django.test import Client

from audit.services import turn_undo
from campaigns.models import ChatMessage, Turn
from campaigns.services import message_post, turn_create
from tests.conftest import World, commit, gm_turn, signed_in


def page(client: Client, world: World) -> str:
    response = client.get(f"/campaigns/{world.campaign.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def card(html: str, creature) -> str:
    """The HTML of one creature card (up to the next card or the end of its roster)."""
    start = re.search(f'<li class="creature [^"]*" data-creature="{creature.pk}"', html).start()
    at = start + 1
    ends = [i for i in (html.find('<li class="creature', at), html.find("</section>", at)) if i > 0]
    return html[start : min(ends)]


def roster(html: str, key: str) -> str:
    start = html.index(f'id="roster-{key}"')
    return html[start : html.index("</section>", start)]


def test_campaign_page_requires_login(world: World, client: Client):
    response = client.get(f"/campaigns/{world.campaign.pk}/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_non_members_get_404_and_never_learn_the_campaign_exists(world: World, client: Client):
    client.force_login(world.outsider)
    assert client.get(f"/campaigns/{world.campaign.pk}/").status_code == 404
    assert client.get(f"/campaigns/{world.campaign.pk}/feed/").status_code == 404
    assert client.get(f"/campaigns/{uuid.uuid4()}/").status_code == 404


def test_page_draws_party_and_foes_with_hp_bars_and_conditions(world: World, player_client: Client):
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -5})
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "add_conditions": ["prone"]})
    commit(
        world, "give_item", {"creature_id": world.hero.pk, "item": "healing_potion", "quantity": 2}
    )
    html = page(player_client, world)

    thorin = card(html, world.hero)
    assert "Thorin" in thorin and "20 / 24" in thorin
    assert 'style="width: 83%"' in thorin and "band-ok" in thorin
    assert "played by player" in thorin
    assert '<span class="res-name">spell slot</span> <span class="res-value">1/3</span>' in thorin
    assert "<li>healing potion ×2</li>" in thorin

    goblin = card(html, world.goblin)
    assert "2 / 7" in goblin and 'style="width: 29%"' in goblin
    assert "band-hurt" in goblin
    assert "<li>prone</li>" in goblin

    assert f'data-creature="{world.ally.pk}"' in roster(html, "party")
    assert f'data-creature="{world.orc.pk}"' in roster(html, "foes")
    assert f'data-creature="{world.goblin.pk}"' not in roster(html, "party")
    assert 'id="roster-others" hidden' in html


def test_a_fallen_character_is_drawn_down_with_its_death_saves(world: World, player_client: Client):
    commit(
        world,
        "modify_creature",
        {"creature_id": world.hero.pk, "set_hp": 0, "death_save": "failure"},
    )
    thorin = card(page(player_client, world), world.hero)
    assert "band-down" in thorin and "0 / 24" in thorin
    assert '<span class="saves" title="Death saves">✓ 0 ✗ 1</span>' in thorin


def test_page_shows_the_scene_chapter_and_dungeon(world: World, player_client: Client):
    commit(world, "set_scene", {"description": "Water drips in the dark.", "location": "Crypt"})
    commit(world, "activate_dungeon", {"dungeon_id": world.dungeon.pk})
    html = page(player_client, world)
    assert '<p class="scene-text">Water drips in the dark.</p>' in html
    assert '<span class="location">Crypt</span>' in html
    assert '<span class="chapter">Chapter 1 · Arrival</span>' in html
    assert '<span class="dungeon-name">Flooded Crypt</span>' in html


def test_combat_tracker_shows_round_order_and_who_is_acting(world: World, player_client: Client):
    assert "No fight right now" in page(player_client, world)
    commit(
        world,
        "start_combat",
        {
            "creature_ids": [world.hero.pk, world.goblin.pk],
            "initiative": {str(world.hero.pk): 17, str(world.goblin.pk): 12},
        },
    )
    commit(world, "advance_turn", {})
    commit(world, "modify_creature", {"creature_id": world.hero.pk, "set_hp": 0})
    html = page(player_client, world)
    assert "Round <strong>1</strong>" in html
    assert re.search(rf'<li class="down" data-creature="{world.hero.pk}">', html)
    order = re.findall(r'<span class="init">(\d+)</span><span class="combatant">(\w+)</span>', html)
    assert order == [("17", "Thorin"), ("12", "Goblin")]
    current = re.search(r'<li class="current"[^>]*>(.*?)</li>', html).group(1)
    assert "Goblin" in current


def test_feed_styles_the_gm_apart_from_players_and_the_table(world: World, player_client: Client):
    turn = gm_turn(world, "I attack the goblin", narration="Your blade bites deep.")
    message_post(
        turn=turn, author=None, role="system", source="system", content="Lia joined the table."
    )
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -3}, turn=turn)
    html = page(player_client, world)
    assert re.search(r'class="msg role-player source-user" data-message="\d+">', html)
    assert re.search(r'class="msg role-gm source-ai_tool_execution ai" data-message="\d+">', html)
    assert re.search(r'class="msg role-system source-system" data-message="\d+">', html)
    assert '<span class="ai-badge">AI</span>' in html
    assert '<p class="text">I attack the goblin</p>' in html
    assert '<span class="summary">Goblin takes 3 damage (7 → 4)</span>' in html
    # The tool's own name, folded, is the GM's; the player reads the words above.
    assert '<code class="tool">modify_creature</code>' not in html
    assert '<summary>tool</summary><code class="tool">modify_creature</code>' in page(
        signed_in(world.owner), world
    )


def test_undo_is_offered_on_the_most_recent_gm_turn_to_those_who_may_undo_it(
    world: World, player_client: Client, other_client: Client
):
    first = gm_turn(world, "I look around.")
    latest = gm_turn(world, "I open the door.")
    turn_create(campaign=world.campaign, actor=world.other, message="I wait.")  # no GM reply yet

    html = page(player_client, world)
    assert f'<button type="button" class="undo" data-undo="{latest.pk}">' in html
    assert f'<button type="button" class="undo" data-undo="{first.pk}" hidden>' in html
    assert re.search(rf'data-turn="{latest.pk}" data-gm="1" data-undoable="1"', html)

    assert 'class="undo"' not in page(other_client, world)  # neither actor nor owner

    owner = Client()
    owner.force_login(world.owner)
    assert f'class="undo" data-undo="{latest.pk}">' in page(owner, world)


def test_a_running_turn_is_not_offered_for_undo_yet(world: World, player_client: Client):
    done = gm_turn(world, "I look around.")
    running = gm_turn(world, "I open the door.")
    Turn.objects.filter(pk=running.pk).update(status=Turn.Status.RUNNING)
    html = page(player_client, world)
    assert f'class="undo" data-undo="{done.pk}">' in html
    assert f'data-undo="{running.pk}"' not in html


def test_an_undone_turn_leaves_a_note_instead_of_its_messages(world: World, player_client: Client):
    turn = gm_turn(world, "I attack the goblin", narration="The goblin falls.")
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -7}, turn=turn)
    turn_undo(
        campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player, reason="wrong target"
    )
    html = page(player_client, world)
    block = html.split(f'data-turn="{turn.pk}"', 1)[1].split("</li>\n", 1)[0]
    # One line saying who undid it and why, when; its messages and changes only inside it.
    note = re.search(r'<summary class="undo-note">(.*?)</summary>', block, re.S)[1]
    assert note.startswith("↶ player undid their turn: “wrong target” · <time datetime=")
    assert '<details class="undone-turn">' in block
    body = block.split("</summary>", 1)[1]
    assert '<p class="text">I attack the goblin</p>' in body
    assert "The goblin falls." in body
    assert "Goblin takes 7 damage (7 → 0)" in body
    assert "7 / 7" in card(html, world.goblin)
    assert 'class="undo"' not in html


def test_a_turn_undone_by_someone_else_names_who_undid_it(world: World, player_client: Client):
    turn = gm_turn(world, "I attack the goblin")
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner)
    assert "↶ player’s turn was undone by owner · <time" in page(player_client, world)


def test_feed_fragment_serves_one_turn_or_the_whole_feed_with_its_event_number(
    world: World, player_client: Client
):
    turn = gm_turn(world, "I attack the goblin")
    base = f"/campaigns/{world.campaign.pk}/feed/"

    one = player_client.get(base, {"turn": turn.pk})
    assert one.status_code == 200
    assert one.content.decode().startswith(f'<li class="turn" data-turn="{turn.pk}"')

    whole = player_client.get(base).content.decode()
    world.campaign.refresh_from_db()
    assert whole.startswith(f'<ol id="feed" class="feed" data-seq="{world.campaign.event_seq}"')
    assert f'data-turn="{turn.pk}"' in whole

    elsewhere = turn_create(campaign=world.foreign.campaign, actor=world.outsider, message="hi")
    assert player_client.get(base, {"turn": elsewhere.pk}).status_code == 404
    assert player_client.get(base, {"turn": "abc"}).status_code == 404


def test_page_hands_its_script_the_event_number_and_no_copy_of_the_game(
    world: World, player_client: Client
):
    """One renderer: the script swaps in the server's fragments, so it starts from the event
    number the page reflects, not from a copy of the state to draw from."""
    gm_turn(world, "I attack the goblin")
    html = page(player_client, world)
    raw = re.search(r'<script id="table-data" type="application/json">(.*?)</script>', html, re.S)
    data = json.loads(raw.group(1))
    world.campaign.refresh_from_db()
    assert data == {
        "campaign": str(world.campaign.pk),
        "me": "player",
        "seq": world.campaign.event_seq,
    }
    assert data["seq"] > 0


def test_messages_of_the_feed_are_escaped(world: World, player_client: Client):
    gm_turn(world, "<script>alert(1)</script>")
    html = page(player_client, world)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert ChatMessage.objects.filter(content__startswith="<script>").exists()
