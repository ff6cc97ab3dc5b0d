"""A history people can read (issue 12, items 5 and 6): changes in plain words written once on
the server, undone turns as one expandable line, and "Undo from here" for whoever may revert the
turn and every later one (the one policy), with its plan drawn by the server."""

import re
from typing import Any

import pytest
from django.test import Client

from audit.models import SecurityEvent, ToolInvocation
from audit.services import turn_undo
from campaigns.models import Turn
from tests.conftest import World, commit, gm_turn, signed_in
from web.pages.changes import describe


def fragment(client: Client, world: World, turn: Turn) -> str:
    response = client.get(f"/campaigns/{world.campaign.pk}/feed/?turn={turn.pk}")
    assert response.status_code == 200
    return response.content.decode()


def summaries(html: str) -> list[str]:
    return re.findall(r'<span class="summary">(.*?)</span>', html)


def plan(client: Client, world: World, turn: Turn, cascade: bool = True):
    flag = "&cascade=1" if cascade else ""
    return client.get(f"/campaigns/{world.campaign.pk}/undo-plan/?turn={turn.pk}{flag}")


def ids(world: World) -> dict[str, int]:
    return {"hero": world.hero.pk, "goblin": world.goblin.pk, "orc": world.orc.pk}


PLAIN_WORDS: list[tuple[str, Any, str]] = [
    ("modify_creature", {"creature_id": "goblin", "hp_delta": -4}, "Goblin takes 4 damage (7 → 3)"),
    (
        "modify_creature",
        {"creature_id": "goblin", "hp_delta": -20},
        "Goblin takes 7 damage (7 → 0)",
    ),
    ("modify_creature", {"creature_id": "hero", "hp_delta": 3}, "Thorin heals 3 HP (20 → 23)"),
    ("modify_creature", {"creature_id": "orc", "set_hp": 1}, "Orc takes 14 damage (15 → 1)"),
    (
        "modify_creature",
        {"creature_id": "goblin", "add_conditions": ["prone", "stunned"]},
        "Goblin is now prone and stunned",
    ),
    ("modify_creature", {"creature_id": "orc", "temp_hp": 4}, "Orc has 4 temporary HP (0 → 4)"),
    ("move_token", {"creature_id": "hero", "x": 3, "y": 4}, "Thorin moves from 1,1 to 3,4"),
    (
        "set_scene",
        {"description": "Water drips in the dark."},
        "The scene is now: Water drips in the dark.",
    ),
    (
        "spawn_creature",
        {"name": "Skeleton", "kind": "monster", "hp": 13, "x": 3, "y": 4},
        "Skeleton appears at 3,4: a monster with 13 HP",
    ),
    (
        "start_combat",
        {"creature_ids": ["hero", "goblin"]},
        "Combat starts: Thorin 10, Goblin 10 — in that order",
    ),
    (
        "give_item",
        {"creature_id": "hero", "item": "rope", "quantity": 2},
        "Thorin gets 2 × rope (0 → 2)",
    ),
    (
        "consume_resource",
        {"creature_id": "hero", "resource": "spell_slot", "amount": 1},
        "Thorin uses 1 × spell slot (1 → 0 left)",
    ),
]


@pytest.mark.parametrize(("tool", "data", "words"), PLAIN_WORDS)
def test_each_change_reads_in_plain_words_with_the_tool_in_a_detail(
    world: World, player_client: Client, tool: str, data: dict, words: str
):
    refs = ids(world)
    data = {
        k: refs.get(v, v)
        if k == "creature_id"
        else [refs[x] for x in v]
        if k == "creature_ids"
        else v
        for k, v in data.items()
    }
    turn = gm_turn(world, "Do it")
    commit(world, tool, data, turn=turn)
    html = fragment(player_client, world, turn)
    assert summaries(html) == [words]
    # The tool's own name is the GM's to look up, folded; a player reads the words only.
    detail = f'<summary>tool</summary><code class="tool">{tool}</code>'
    assert detail not in html and tool not in html
    assert detail in fragment(signed_in(world.owner), world, turn)


def test_combat_ends_and_removing_conditions_read_in_plain_words(world: World, player_client):
    turn = gm_turn(world, "Fight")
    goblin = world.goblin.pk
    commit(world, "start_combat", {"creature_ids": [world.hero.pk, goblin]}, turn=turn)
    commit(
        world, "modify_creature", {"creature_id": goblin, "add_conditions": ["prone"]}, turn=turn
    )
    commit(
        world, "modify_creature", {"creature_id": goblin, "remove_conditions": ["prone"]}, turn=turn
    )
    commit(world, "end_combat", {}, turn=turn)
    assert summaries(fragment(player_client, world, turn)) == [
        "Combat starts: Thorin 10, Goblin 10 — in that order",
        "Goblin is now prone",
        "Goblin is no longer prone",
        "Combat ends after 1 round",
    ]


def test_input_no_describer_can_read_falls_back_to_the_tools_summary(world: World):
    assert describe("modify_creature", {"creature_id": "x"}, names={}) == "modify_creature"
    assert describe("no_such_tool", {}, names={}) == "no_such_tool"
    assert describe("move_token", "not a dict", names={}) == "move_token"


def test_feed_entries_carry_a_time_element(world: World, player_client: Client):
    turn = gm_turn(world, "I look around")
    html = fragment(player_client, world, turn)
    stamp = turn.created_at.isoformat(timespec="seconds")[:19]
    assert re.search(
        rf'<time class="turn-time" datetime="{stamp}[^"]*">\w{{3}} \d+, \d\d:\d\d</time>', html
    )


def test_an_undone_turn_is_one_line_expanding_to_its_message_reply_and_changes(
    world: World, other_client: Client
):
    turn = gm_turn(world, "I attack the goblin", narration="Your blade bites deep.")
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -4}, turn=turn)
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner, reason="wrong foe")
    html = fragment(other_client, world, turn)
    head, body = html.split("</summary>", 1)
    line = head.split('<summary class="undo-note">', 1)[1]
    assert line.startswith("↶ player’s turn was undone by owner: “wrong foe” · <time datetime=")
    assert "I attack the goblin" not in line and "Goblin" not in line
    assert body.index("I attack the goblin") < body.index("Your blade bites deep.")
    assert "Goblin takes 4 damage (7 → 3)" in body
    assert '<details class="undone-turn">' in html
    assert "Undo this and what depends on it" not in html


# ---- Undo from here: who sees it -----------------------------------------------------------


def from_here(client: Client, world: World) -> set[int]:
    """The turns whose "Undo from here" is shown (the newest turn's is drawn hidden)."""
    html = client.get(f"/campaigns/{world.campaign.pk}/").content.decode()
    return {int(pk) for pk in re.findall(r'data-undo-from="(\d+)">', html)}


def test_undo_from_here_only_for_those_who_may_revert_every_later_turn(world: World):
    first = gm_turn(world, "I attack the goblin")
    second = gm_turn(world, "move me to 3,4")
    third = gm_turn(world, "I hide", actor=world.other)
    cogm = signed_in(world.cogm)
    # The owner and a co-GM may revert anyone's turn: from every turn but the last.
    assert from_here(signed_in(world.owner), world) == {first.pk, second.pk}
    assert from_here(cogm, world) == {first.pk, second.pk}
    # The newest turn carries it hidden: the page shows it live once a later turn arrives.
    owner_page = signed_in(world.owner).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert f'data-undo-from="{third.pk}" hidden>' in owner_page
    # The player may not revert the other player's later turn; the other may not revert theirs.
    assert from_here(signed_in(world.player), world) == set()
    assert from_here(signed_in(world.other), world) == set()
    # Once that turn is undone, nothing later stands in the player's way.
    turn_undo(campaign_id=world.campaign.pk, turn_id=third.pk, user=world.owner)
    assert from_here(signed_in(world.player), world) == {first.pk}


def test_a_turns_own_fragment_answers_from_here_for_the_turns_after_it(world: World):
    first = gm_turn(world, "I attack the goblin")
    gm_turn(world, "move me to 3,4")
    player = signed_in(world.player)
    assert f'data-undo-from="{first.pk}"' in fragment(player, world, first)
    gm_turn(world, "I hide", actor=world.other)
    assert 'data-undo-from="' not in fragment(player, world, first)
    assert 'data-from="0"' in fragment(player, world, first)


# ---- the plan the dialog shows --------------------------------------------------------------


def test_the_plan_names_the_turn_and_lists_each_change_once(world: World):
    first = gm_turn(world, "I attack the goblin")
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -4}, turn=first)
    commit(world, "start_combat", {"creature_ids": [world.hero.pk, world.goblin.pk]}, turn=first)
    second = gm_turn(world, "move me to 3,4")
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1}, turn=second)
    commit(world, "end_combat", {}, turn=second)
    response = plan(signed_in(world.owner), world, first)
    assert response.status_code == 200
    html = response.content.decode()
    title = "Undo player’s turn: ‘I attack the goblin’, and every later change that depends on it?"
    assert title in html
    assert "The message and the GM’s reply leave the feed" in html
    changes = re.findall(r"<li>(.*?) <code", html.split('class="undo-calls"')[1].split("</ul>")[0])
    assert sorted(changes) == sorted(
        [
            'Combat ends after 1 round <span class="later">(later turn)</span>',
            'Goblin takes 1 damage (3 → 2) <span class="later">(later turn)</span>',
            "Combat starts: Thorin 10, Goblin 10 — in that order",
            "Goblin takes 4 damage (7 → 3)",
        ]
    )
    diff = re.findall(r"<li>([^<]*)</li>", html.split('class="undo-changes"')[1])
    assert len(diff) == len(set(diff))
    assert "Goblin hp: 2 → 7" in diff
    assert 'data-blocked="0"' in html


def test_a_plan_without_cascade_names_the_later_changes_in_the_way(world: World):
    first = gm_turn(world, "I attack the goblin")
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -4}, turn=first)
    second = gm_turn(world, "again")
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1}, turn=second)
    html = plan(signed_in(world.player), world, first, cascade=False).content.decode()
    assert 'data-blocked="1"' in html
    assert "Goblin takes 1 damage (3 → 2)" in html.split('class="undo-conflicts"')[1]


def test_a_refused_plan_is_the_message_alone_and_a_security_event(world: World):
    first = gm_turn(world, "I attack the goblin")
    commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -4}, turn=first)
    response = plan(signed_in(world.other), world, first)
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == (
        "Only the original actor, the campaign owner or a co-GM may do this."
    )
    assert SecurityEvent.objects.filter(user=world.other, target=f"turn:{first.pk}").exists()
    assert ToolInvocation.objects.get().status == ToolInvocation.Status.COMMITTED


def test_the_plan_is_404_for_non_members_and_unknown_turns(world: World):
    first = gm_turn(world, "I attack the goblin")
    assert plan(signed_in(world.outsider), world, first).status_code == 404
    owner = signed_in(world.owner)
    assert owner.get(f"/campaigns/{world.campaign.pk}/undo-plan/?turn=99999").status_code == 404
    assert owner.get(f"/campaigns/{world.campaign.pk}/undo-plan/?turn=x").status_code == 404
