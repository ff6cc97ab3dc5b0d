"""The GM's own hand (docs/architecture.md#set-up-and-the-gms-hand): the owner and co-GMs change
the table from the page through the audited dispatch. Each call is logged with source `user` and the
person as actor, in a turn of its own, broadcast with source `user`, and undone like the AI's
calls."""

import pytest
from django.test import Client

from audit.models import SecurityEvent, ToolInvocation
from audit.services import turn_undo
from campaigns.models import Creature, Turn
from tests.conftest import World, commit, dump, recorded_denial, signed_in

JSON = {"HTTP_ACCEPT": "application/json"}


def hand(client: Client, world: World, tool: str, **fields: str):
    return client.post(f"/campaigns/{world.campaign.pk}/hand/", {"tool": tool, **fields}, **JSON)


@pytest.fixture
def owner_client(world: World) -> Client:
    return signed_in(world.owner)


def test_the_owners_hand_is_logged_as_theirs_with_source_user(
    world: World, owner_client: Client, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = hand(
            owner_client,
            world,
            "modify_creature",
            creature_id=str(world.goblin.pk),
            hp_delta="-4",
            add_conditions="poisoned, prone",
        )
    assert response.status_code == 201, response.content
    row = ToolInvocation.objects.get(pk=response.json()["invocation"])
    assert (row.tool_name, row.status, row.source) == ("modify_creature", "committed", "user")
    assert (row.user, row.requested_by) == (world.owner, None)
    assert row.input == {
        "creature_id": world.goblin.pk,
        "hp_delta": -4,
        "add_conditions": ["poisoned", "prone"],
    }
    assert (row.turn.actor, row.turn.pk) == (world.owner, response.json()["turn"])
    goblin = Creature.objects.get(pk=world.goblin.pk)
    assert (goblin.hp, goblin.conditions) == (3, ["poisoned", "prone"])
    changed = [e for e in events if e["type"] == "state_changed"]
    assert changed and {e["source"] for e in changed} == {"user"}
    assert {e["turn"] for e in changed} == {row.turn_id}


def test_a_co_gm_sets_the_scene_and_moves_a_token(world: World):
    cogm = signed_in(world.cogm)
    assert (
        hand(cogm, world, "set_scene", description="Fog rolls in.", location="Moor").status_code
        == 201
    )
    assert (
        hand(cogm, world, "move_token", creature_id=str(world.orc.pk), x="4", y="6").status_code
        == 201
    )
    world.campaign.refresh_from_db()
    assert (world.campaign.scene, world.campaign.location) == ("Fog rolls in.", "Moor")
    assert Creature.objects.values_list("x", "y").get(pk=world.orc.pk) == (4, 6)
    assert set(ToolInvocation.objects.values_list("user__username", "source")) == {("cogm", "user")}


def test_a_player_has_no_gm_hand(world: World, player_client: Client):
    before = dump(world.campaign)
    response = hand(
        player_client, world, "modify_creature", creature_id=str(world.goblin.pk), hp_delta="-7"
    )
    assert response.status_code == 403
    assert dump(world.campaign) == before
    assert not ToolInvocation.objects.exists() and not Turn.objects.exists()
    kind, user, _campaign, target, _ip = recorded_denial()
    assert (kind, user, target) == (SecurityEvent.Kind.ADMIN_DENIED, world.player, "hand_call")


def test_a_stranger_gets_404(world: World):
    response = hand(signed_in(world.outsider), world, "set_scene", description="Mine now.")
    assert response.status_code == 404
    assert not ToolInvocation.objects.exists() and not SecurityEvent.objects.exists()


@pytest.mark.parametrize(
    "tool, fields, detail",
    [
        (
            "move_token",
            {"x": "-1", "y": "2"},
            "Invalid input: input['x']: -1 is less than the minimum of 0",
        ),
        (
            "move_token",
            {"x": "two", "y": "2"},
            "Invalid input: input['x']: 'two' is not of type 'integer'",
        ),
        ("modify_creature", {}, "Invalid input:"),
        ("summon_dragon", {}, 'tool: "summon_dragon" is not a valid choice.'),
    ],
)
def test_input_the_tool_refuses_is_refused_before_any_turn_exists(
    world: World, owner_client: Client, tool: str, fields: dict, detail: str
):
    before = dump(world.campaign)
    response = hand(owner_client, world, tool, creature_id=str(world.goblin.pk), **fields)
    assert response.status_code in (400, 422)
    assert response.json()["detail"].startswith(detail)
    assert dump(world.campaign) == before
    assert not ToolInvocation.objects.exists() and not Turn.objects.exists()


def test_a_tool_error_is_shown_and_leaves_its_failed_row(world: World, owner_client: Client):
    before = dump(world.campaign)
    response = hand(
        owner_client, world, "move_token", creature_id=str(world.foreign.pk), x="1", y="1"
    )
    assert response.status_code == 422
    row = ToolInvocation.objects.get()
    assert row.status == "failed" and response.json()["detail"] == row.error
    assert dump(world.campaign) == before


def test_a_plain_post_goes_back_to_the_page_or_shows_the_refusal(
    world: World, owner_client: Client
):
    url = f"/campaigns/{world.campaign.pk}/hand/"
    done = owner_client.post(url, {"tool": "set_scene", "description": "Dawn."})
    assert done.status_code == 302 and done["Location"].endswith("#hand")
    refused = owner_client.post(
        url, {"tool": "move_token", "creature_id": "1", "x": "-1", "y": "0"}
    )
    assert refused.status_code == 422
    assert (
        "Invalid input: input[&#x27;x&#x27;]: -1 is less than the minimum of 0"
        in refused.content.decode()
    )


def test_the_hand_is_undone_like_the_ais_calls_and_apart_from_them(
    world: World, owner_client: Client
):
    ai_turn = world.turn(message="I attack the orc")
    commit(
        world,
        "modify_creature",
        {"creature_id": world.orc.pk, "hp_delta": -5},
        actor=world.player,
        turn=ai_turn,
    )
    before_hand = dump(world.campaign)
    response = hand(
        owner_client, world, "modify_creature", creature_id=str(world.goblin.pk), hp_delta="-4"
    )
    hand_turn = Turn.objects.get(pk=response.json()["turn"])
    block = owner_client.get(f"/campaigns/{world.campaign.pk}/feed/?turn={hand_turn.pk}")
    block = block.content.decode()
    assert '<span class="summary">Goblin takes 4 damage' in block
    assert '<code class="tool">modify_creature</code>' in block
    assert f'class="undo" data-undo="{hand_turn.pk}"' in block  # the script shows the latest
    assert (
        'data-undo="'
        not in signed_in(world.player)
        .get(f"/campaigns/{world.campaign.pk}/feed/?turn={hand_turn.pk}")
        .content.decode()
    )
    result = turn_undo(
        campaign_id=world.campaign.pk, turn_id=hand_turn.pk, user=world.owner, reason="misclick"
    )
    assert len(result.reverted) == 1
    assert dump(world.campaign) == before_hand  # the AI's damage to the orc stays
    row = ToolInvocation.objects.get(turn=hand_turn)
    assert (row.status, row.reverted_by) == ("reverted", world.owner)


def test_a_player_may_not_undo_the_gms_hand(world: World, owner_client: Client):
    response = hand(owner_client, world, "set_scene", description="Night.")
    from core.errors import Forbidden

    with pytest.raises(Forbidden):
        turn_undo(campaign_id=world.campaign.pk, turn_id=response.json()["turn"], user=world.player)
    assert ToolInvocation.objects.get().status == "committed"


def test_a_hand_change_offers_its_own_undo_and_keeps_the_latest_gm_turns(
    world: World, owner_client: Client
):
    ai_turn = world.turn(message="I attack the orc")
    commit(world, "modify_creature", {"creature_id": world.orc.pk, "hp_delta": -5}, turn=ai_turn)
    Turn.objects.filter(pk=ai_turn.pk).update(status=Turn.Status.COMPLETED)
    hand_turn = hand(owner_client, world, "set_scene", description="Dusk.").json()["turn"]
    html = owner_client.get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert f'data-turn="{ai_turn.pk}" data-gm="1"' in html
    assert f'data-turn="{hand_turn}" data-gm="0" data-hand="1"' in html
    assert f'class="undo" data-undo="{ai_turn.pk}">' in html  # still the latest GM turn
    assert f'class="undo" data-undo="{hand_turn}">↶ Undo this change' in html
