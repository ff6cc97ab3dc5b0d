"""The one decision of what a viewer may see (`campaigns.visibility`): who sees as the GM, the
fog rule, its facts read from a dump or in one query, and what players see of events."""

import pytest

from audit.permissions import may_revert
from campaigns import visibility
from campaigns.events import MessageCreated, StateChanged
from campaigns.models import Source
from campaigns.permissions import runs_table
from campaigns.realtime import event
from campaigns.selectors import campaign_state
from campaigns.visibility import Fog, Sight, fog_of_state, fog_read, held_call_hidden, sight_of
from tests.conftest import World, commit, fog_over_the_goblin

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("who", "sight"),
    [
        ("owner", Sight.GM),
        ("cogm", Sight.GM),
        ("staff", Sight.GM),
        ("player", Sight.PLAYER),
        ("other", Sight.PLAYER),
    ],
)
def test_the_gm_is_who_runs_the_table_and_may_revert_anyones_turn(world, staff, who, sight):
    user = staff if who == "staff" else getattr(world, who)
    assert sight_of(campaign=world.campaign, user=user) is sight
    gm = sight is Sight.GM
    assert runs_table(campaign=world.campaign, user=user) is gm
    assert may_revert(user=user, campaign=world.campaign, actor_id=None) is gm


def test_an_inactive_owner_sees_as_a_player(world: World):
    world.owner.is_active = False
    assert sight_of(campaign=world.campaign, user=world.owner) is Sight.PLAYER


def test_the_rule_hides_npcs_and_monsters_on_unrevealed_cells_while_fog_is_in_play():
    fog = Fog(in_play=True, revealed=frozenset({(1, 1)}))
    assert fog.hides("monster", (2, 2)) and fog.hides("npc", (2, 2))
    assert not fog.hides("pc", (2, 2)) and not fog.hides("monster", (1, 1))
    assert not Fog(in_play=False).hides("monster", (2, 2))


def test_one_query_reads_the_facts_a_dump_holds(world: World, django_assert_num_queries):
    fog_over_the_goblin(world)
    commit(world, "move_token", {"creature_id": world.orc.pk, "x": 20, "y": 20})
    from_dump = fog_of_state(campaign_state(world.campaign))
    with django_assert_num_queries(1):
        read = fog_read(campaign_id=world.campaign.pk)
    assert read.in_play and read.creatures == from_dump.creatures
    assert read.hidden == from_dump.hidden == {world.goblin.pk, world.orc.pk}
    assert read.revealed == {(1, 1), (2, 1)}  # the cells that matter: the creatures'
    only = fog_read(campaign_id=world.campaign.pk, creature_ids=[world.goblin.pk], cells=[(3, 3)])
    assert (set(only.creatures), only.revealed) == ({world.goblin.pk}, {(3, 3)})
    assert not fog_read(campaign_id=world.foreign.campaign_id).in_play


def test_a_held_call_is_hidden_when_it_names_a_hidden_creature_or_would_put_one_in_the_fog(
    world: World,
):
    fog_over_the_goblin(world)
    fog = fog_read(campaign_id=world.campaign.pk, cells=[(3, 3), (9, 9)])
    orc, goblin, hero = world.orc.pk, world.goblin.pk, world.hero.pk
    diff = [{"entity": "creature", "id": str(goblin), "field": "hp", "before": 7, "after": 2}]
    assert held_call_hidden({"creature_id": goblin, "hp_delta": -5}, [], fog)
    assert held_call_hidden({"creature_ids": [hero]}, diff, fog)
    assert held_call_hidden({"creature_id": orc, "x": 9, "y": 9}, [], fog)  # seen, moved out
    assert not held_call_hidden({"creature_id": orc, "x": 3, "y": 3}, [], fog)
    assert not held_call_hidden({"creature_id": hero, "x": 9, "y": 9}, [], fog)  # a PC
    assert held_call_hidden({"name": "Bat", "kind": "monster", "hp": 1, "x": 9, "y": 9}, [], fog)
    assert not held_call_hidden({"name": "Ann", "kind": "pc", "hp": 1, "x": 9, "y": 9}, [], fog)


def numbered(world: World, *events: dict) -> list[dict]:
    return [{**e, "campaign": str(world.campaign.pk), "seq": n} for n, e in enumerate(events)]


def test_events_that_name_no_creature_cost_no_query(world: World, django_assert_num_queries):
    fog_over_the_goblin(world)
    scene = event(
        StateChanged(entity="campaign", id="x", fields={"scene": "A"}), source=Source.SYSTEM
    )
    pc = event(
        StateChanged(entity="creature", id=world.hero.pk, fields={"kind": "pc", "x": 9, "y": 9}),
        source=Source.USER,
    )
    said = event(
        MessageCreated(id=1, role="player", content="The goblin!", author="alice", gm=None),
        source=Source.USER,
    )
    with django_assert_num_queries(0):
        assert (
            visibility.player_envelopes(world.campaign.pk, numbered(world, scene, pc, said)) is None
        )


def test_without_fog_in_play_players_see_the_events_as_they_are(world: World):
    moved = event(
        StateChanged(
            entity="creature", id=str(world.goblin.pk), facet="position", fields={"x": 9, "y": 9}
        ),
        source=Source.AI_TOOL_EXECUTION,
    )
    assert visibility.player_envelopes(world.campaign.pk, numbered(world, moved)) is None
