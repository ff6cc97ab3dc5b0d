"""A turn left `running` by a process that died is failed, with a note, not left hanging."""

from datetime import timedelta

from django.core.management import call_command
from django.utils import timezone

from campaigns.models import ChatMessage, Turn
from gm.services import gm_turn_run, turn_stale_fail


def _abandoned(world, *, age_seconds: int) -> Turn:
    turn = world.turn(message="I attack the goblin")
    Turn.objects.filter(pk=turn.pk).update(
        status=Turn.Status.RUNNING, created_at=timezone.now() - timedelta(seconds=age_seconds)
    )
    return turn


def test_turn_running_past_the_timeout_is_failed_with_a_system_note(
    world, settings, events, django_capture_on_commit_callbacks
):
    settings.GM_TURN_TIMEOUT = 60
    stale = _abandoned(world, age_seconds=120)
    fresh = _abandoned(world, age_seconds=5)
    with django_capture_on_commit_callbacks(execute=True):
        assert turn_stale_fail(campaign_id=world.campaign.pk) == [stale.pk]
    statuses = dict(Turn.objects.values_list("pk", "status"))
    assert (statuses[stale.pk], statuses[fresh.pk]) == ("failed", "running")
    note = ChatMessage.objects.get(turn=stale, role="system")
    assert (
        note.content
        == "The GM could not finish this turn: the GM stopped answering (it was cut off)."
    )
    (done,) = [e for e in events if e["type"] == "gm_turn_completed"]
    assert done["turn"] == stale.pk and done["data"]["status"] == "failed"


def test_next_gm_turn_of_the_campaign_sweeps_first(world, settings):
    settings.GM_TURN_TIMEOUT = 60
    stale = _abandoned(world, age_seconds=120)
    answered = gm_turn_run(turn=world.turn(message="we take a short rest"))
    assert answered.status == "completed"
    assert Turn.objects.get(pk=stale.pk).status == "failed"


def test_recover_command_reports_what_it_failed(world, settings, capsys):
    settings.GM_TURN_TIMEOUT = 60
    stale = _abandoned(world, age_seconds=120)
    call_command("gm_recover_turns")
    assert capsys.readouterr().out.strip() == f"1 stale turn(s) failed: [{stale.pk}]"
    call_command("gm_recover_turns")
    assert capsys.readouterr().out.strip() == "0 stale turn(s) failed."
