"""Replaying a recorded turn against another model: the context it had, from its pre-state, the
two models' calls side by side (with which the table later undid), and nothing kept: the state,
the log, the transcript and the feed are the same after as before, and no event left."""

import json

import pytest
from django.core.management import CommandError, call_command

from audit.models import SecurityEvent, ToolInvocation
from audit.services import turn_undo
from campaigns.models import ChatMessage
from core.errors import Forbidden
from gm.models import GMRound
from gm.providers import provider_for
from gm.replay import turn_replay
from tests.conftest import dump, signed_in
from tests.gm.fake_openai import VERSION, call


def everything(world) -> str:
    """The world and every record of play, as one string."""
    log = ToolInvocation.objects.filter(campaign=world.campaign).order_by("sequence")
    return json.dumps(
        {
            "state": dump(world.campaign),
            "log": list(log.values("id", "status", "input", "result", "reverted_at")),
            "rounds": GMRound.objects.count(),
            "messages": list(ChatMessage.objects.values("id", "content", "reverted")),
        },
        sort_keys=True,
        default=str,
    )


@pytest.fixture
def recorded(world, play, settings):
    """Two scripted turns: a hit on the goblin, then a step (undone by the table)."""
    settings.GM_PROVIDER = "scripted"
    first = play("I attack the goblin")
    second = play("move me to 3,4")
    turn_undo(campaign_id=world.campaign.pk, turn_id=second.pk, user=world.owner)
    return first, second


def test_gm_replay_prints_both_models_from_the_pre_state_and_keeps_nothing(
    world, recorded, openai_server, events, capsys
):
    first, _ = recorded
    hit = call("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -3})
    openai_server.reply("You swing wide. ", calls=[hit])
    openai_server.reply("The goblin yelps.")
    before, seen = everything(world), len(events)

    call_command("gm_replay", str(first.pk), "--provider", "openai")

    out = capsys.readouterr().out
    assert everything(world) == before and len(events) == seen
    assert f"Turn {first.pk}: I attack the goblin" in out
    assert "== recorded: scripted/1" in out and f"== replayed: openai/{VERSION}" in out
    assert "narration: You swing wide. \n\nThe goblin yelps." in out.replace("\r", "")
    replayed = out.split("== replayed")[1]
    # From the pre-state: the goblin had all 7 HP when the turn began.
    assert '"hp": 4' in replayed and "modify_creature" in replayed
    assert "HP 7/7" in openai_server.requests[0]["messages"][0]["content"]
    assert openai_server.requests[0]["messages"][-1]["content"].endswith("I attack the goblin")


def test_the_replay_names_the_calls_the_table_undid(world, recorded, openai_server):
    _, second = recorded
    openai_server.reply("Nothing this time.")
    replay = turn_replay(turn_id=second.pk, provider=provider_for("openai"))
    assert [c.undone for c in replay.recorded.calls] == [True]
    assert replay.replayed.calls == [] and replay.replayed.text == "Nothing this time."


def test_a_replayed_call_the_tool_refuses_is_shown_failed_and_nothing_changes(
    world, recorded, openai_server
):
    first, _ = recorded
    openai_server.reply(calls=[call("modify_creature", {"creature_id": 999999, "hp_delta": -3})])
    openai_server.reply("Hm.")
    before = everything(world)
    replay = turn_replay(turn_id=first.pk, provider=provider_for("openai"))
    [replayed] = replay.replayed.calls
    assert replayed.ok is False and everything(world) == before


def test_an_unknown_turn_or_provider_is_a_command_error(world, recorded):
    with pytest.raises(CommandError, match="No GM turn"):
        call_command("gm_replay", "999999", "--provider", "scripted")
    with pytest.raises(CommandError, match="unknown GM provider"):
        call_command("gm_replay", str(recorded[0].pk), "--provider", "nope")


def test_the_admin_action_shows_both_models_side_by_side_and_keeps_nothing(
    world, recorded, openai_server, staff, events
):
    first, _ = recorded
    hit = call("modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -3})
    openai_server.reply("You swing wide. ", calls=[hit])
    openai_server.reply("The goblin yelps.")
    client = signed_in(staff)
    url = "/admin/campaigns/turn/"
    chosen = {"action": "replay_selected", "_selected_action": [first.pk]}
    form = client.post(url, chosen)
    assert form.status_code == 200 and b"Replay turn" in form.content
    assert not openai_server.requests  # nothing asked before the GM is chosen
    before, seen = everything(world), len(events)

    page = client.post(url, {**chosen, "replay": "yes", "provider": "openai", "model": ""})

    text = page.content.decode()
    assert page.status_code == 200
    assert f"replayed: openai/{VERSION}" in text and "recorded: scripted/1" in text
    assert "You swing wide." in text and "would run" in text
    assert everything(world) == before and len(events) == seen


def test_replaying_from_the_admin_is_for_staff_who_read_the_log(world, recorded, openai_server):
    first, _ = recorded
    with pytest.raises(Forbidden):
        turn_replay(turn_id=first.pk, provider=provider_for("openai"), by=world.owner)
    assert SecurityEvent.objects.get().target == "gm_replay"
    assert not openai_server.requests
