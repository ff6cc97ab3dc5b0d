"""The scripted GM end to end: table talk in, audited tool calls, narration and events out."""

import json
import random

from ai_tools.tools.read import roll
from audit.models import ToolInvocation
from audit.services import turn_undo
from campaigns.models import Campaign, ChatMessage, Creature, Encounter, Resource
from campaigns.selectors import campaign_state
from gm.scripted import DAMAGE, HINT, MODEL
from gm.session import DELTA_MIN_CHARS
from tests.gm.conftest import of_turn


def calls(turn):
    return list(ToolInvocation.objects.filter(turn=turn).order_by("sequence"))


def reply(turn) -> str:
    return ChatMessage.objects.get(turn=turn, role=ChatMessage.Role.GM).content


def dump(campaign) -> str:
    return json.dumps(campaign_state(campaign), sort_keys=True)


def test_attack_rolls_damage_calls_modify_creature_and_narrates(world, play, events):
    turn = play("I attack the goblin!")

    assert turn.status == "completed"
    [row] = calls(turn)
    assert (row.tool_name, row.status, row.model, row.source) == (
        "modify_creature",
        "committed",
        MODEL,
        "gm",
    )
    assert row.user_id == world.player.pk
    damage = -row.input["hp_delta"]
    assert 3 <= damage <= 10  # 1d8+2
    world.goblin.refresh_from_db()
    assert world.goblin.hp == max(0, 7 - damage)
    assert f"Thorin strikes Goblin for {damage} damage" in reply(turn)

    types = [e["type"] for e in of_turn(events, turn)]
    assert types[:2] == ["message_created", "gm_turn_started"]  # the player's, then the GM's
    assert types[-2:] == ["message_created", "gm_turn_completed"]
    assert "gm_text_delta" in types and "state_changed" in types
    deltas = "".join(
        e["data"]["text"] for e in of_turn(events, turn) if e["type"] == "gm_text_delta"
    )
    assert deltas.strip() == reply(turn)
    completed = of_turn(events, turn)[-1]
    assert completed["source"] == "ai_tool_execution"
    assert completed["data"]["status"] == "completed"
    assert completed["data"]["invocations"] == [str(row.pk)]
    assert completed["data"]["model"] == MODEL


def test_damage_is_seeded_from_the_turn_so_a_turn_always_rolls_the_same(world, play):
    position = "i attack the orc".index("attack")
    for turn in (play("I attack the orc"), play("I attack the orc")):
        expected = roll(DAMAGE, random.Random(f"{turn.pk}:{position}"))["total"]
        assert calls(turn)[0].input["hp_delta"] == -expected


def test_a_killing_blow_marks_a_monster_dead(world, play):
    Creature.objects.filter(pk=world.goblin.pk).update(hp=1)
    turn = play("I stab the goblin")
    assert calls(turn)[0].input["add_conditions"] == ["dead"]
    world.goblin.refresh_from_db()
    assert (world.goblin.hp, world.goblin.conditions) == (0, ["dead"])
    assert "Goblin falls." in reply(turn)


def test_undo_of_a_gm_turn_restores_the_campaign_state(world, play):
    before = dump(world.campaign)
    turn = play("Roll initiative, then I attack the goblin and move me to 3,4")
    assert [r.tool_name for r in calls(turn)] == ["start_combat", "modify_creature", "move_token"]
    assert dump(world.campaign) != before

    outcome = turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)

    assert len(outcome.reverted) == 3
    assert dump(world.campaign) == before


def test_long_rest_restores_the_actors_characters(world, play):
    Creature.objects.filter(pk=world.hero.pk).update(hp=3)
    turn = play("We take a long rest.")
    [row] = calls(turn)
    assert (row.tool_name, row.input) == ("rest", {"kind": "long"})
    world.hero.refresh_from_db()
    assert world.hero.hp == world.hero.max_hp
    slot = Resource.objects.get(creature=world.hero, name="spell_slot")
    assert slot.current == slot.maximum
    assert "Thorin regains 2 spell_slot." in reply(turn)


def test_short_rest(world, play):
    turn = play("let's take a short rest")
    assert calls(turn)[0].input == {"kind": "short"}
    assert Resource.objects.get(creature=world.hero, name="ki").current == 2


def test_move_me_moves_the_actors_character(world, play):
    turn = play("move me to 3,4")
    assert calls(turn)[0].input == {"creature_id": world.hero.pk, "x": 3, "y": 4}
    world.hero.refresh_from_db()
    assert (world.hero.x, world.hero.y) == (3, 4)
    assert "Thorin moves to (3, 4)." in reply(turn)


def test_the_owner_moves_a_named_creature(world, play):
    play("Move the orc to 7, 2", actor=world.owner)
    world.orc.refresh_from_db()
    assert (world.orc.x, world.orc.y) == (7, 2)


def test_roll_initiative_starts_combat_with_monsters_and_pcs(world, play):
    turn = play("Roll initiative!")
    [row] = calls(turn)
    assert row.tool_name == "start_combat"
    assert set(row.input["creature_ids"]) == {
        world.hero.pk,
        world.ally.pk,
        world.goblin.pk,
        world.orc.pk,
    }
    encounter = Encounter.objects.get(campaign=world.campaign, active=True)
    assert len(encounter.order) == 4
    assert "Roll for initiative! The order:" in reply(turn)


def test_end_combat_after_a_fight(world, play):
    play("we fight")
    turn = play("The combat is over.")
    assert calls(turn)[0].tool_name == "end_combat"
    assert not Encounter.objects.filter(campaign=world.campaign, active=True).exists()


def test_next_chapter(world, play):
    turn = play("On to the next chapter")
    assert calls(turn)[0].tool_name == "advance_chapter"
    world.campaign.refresh_from_db()
    assert world.campaign.current_chapter_id == world.chapters[1].pk
    assert "Depths" in reply(turn)


def test_end_the_adventure_when_asked(world, play):
    turn = play("Let's end the adventure here.", actor=world.owner)
    assert calls(turn)[0].tool_name == "end_adventure"
    assert Campaign.objects.get(pk=world.campaign.pk).status == "completed"


def test_a_refused_tool_call_is_narrated_and_the_turn_still_completes(world, play):
    turn = play("end combat")
    [row] = calls(turn)
    assert (row.tool_name, row.status) == ("end_combat", "failed")
    assert turn.status == "completed"
    assert "There is no fight to end: There is no active combat." in reply(turn)


def test_attacking_a_creature_that_is_not_there_changes_nothing(world, play):
    turn = play("I attack the dragon")
    assert calls(turn) == []
    assert "no such creature" in reply(turn)


def test_a_creature_is_found_by_a_distinctive_word_of_its_name(world, play):
    archer = Creature.objects.create(
        campaign=world.campaign, name="Goblin Archer", kind="monster", hp=9, max_hp=9
    )
    play("I shoot the archer")
    archer.refresh_from_db()
    assert archer.hp < 9


def test_plain_talk_gets_a_hint_and_no_tool_call(world, play):
    turn = play("Hello everyone, what a nice tavern.")
    assert calls(turn) == []
    assert turn.status == "completed"
    assert reply(turn) == HINT


def test_a_word_delay_streams_the_narration_a_word_at_a_time(
    world, play, events, settings, monkeypatch
):
    # GM_SCRIPTED_WORD_DELAY (the capacity bench's pace of a model's stream): a wait before
    # each word, and the words leave as they are said, the narration unchanged.
    settings.GM_SCRIPTED_WORD_DELAY = 0.05
    waits = []
    monkeypatch.setattr("gm.scripted.time.sleep", waits.append)
    turn = play("I attack the goblin and move me to 3,4")

    assert [r.tool_name for r in calls(turn)] == ["modify_creature", "move_token"]
    words = reply(turn).split()
    assert waits.count(0.05) == len(words)
    deltas = [e["data"]["text"] for e in of_turn(events, turn) if e["type"] == "gm_text_delta"]
    assert "".join(deltas).strip() == reply(turn)
    # Each delta is the few words said since the last one (without the delay: a sentence).
    longest = max(len(word) for word in words) + 1
    assert all(len(delta) < DELTA_MIN_CHARS + longest for delta in deltas)
    assert len(deltas) > len(reply(turn)) // (DELTA_MIN_CHARS + longest)
