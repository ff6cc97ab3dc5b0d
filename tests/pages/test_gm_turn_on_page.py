"""A GM turn on the campaign page while the GM answers it, and after: the note that the GM is
thinking, Stop and Retry, each offered only to those the turn services let use them."""

import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client

from audit import selectors as audit_selectors
from audit.services import turn_undo
from campaigns.models import Turn
from gm.runner import turn_close
from gm.services import turn_cancel, turn_retry, turn_submit
from tests.conftest import World, signed_in
from tests.pages.test_campaign_page import gm_turn

THINKING = '<p class="thinking" role="status">The GM is thinking…</p>'


def fragment(client: Client, world: World, turn: Turn) -> str:
    """One turn as the page's script fetches it (and as a reload draws it)."""
    response = client.get(f"/campaigns/{world.campaign.pk}/feed/", {"turn": turn.pk})
    assert response.status_code == 200
    return response.content.decode()


def clients(world: World) -> dict[str, Client]:
    people = ("player", "owner", "cogm", "other")
    return {name: signed_in(getattr(world, name)) for name in people}


def stop_button(turn: Turn) -> str:
    return f'<button type="button" class="stop" data-stop="{turn.pk}">'


def retry_button(turn: Turn) -> str:
    return f'<button type="button" class="retry" data-retry="{turn.pk}">'


@pytest.mark.parametrize("status", [Turn.Status.QUEUED, Turn.Status.RUNNING])
def test_every_member_sees_that_the_gm_is_thinking_and_who_may_stop_it(world: World, status):
    turn = turn_submit(campaign=world.campaign, actor=world.player, message="I open the door.")
    Turn.objects.filter(pk=turn.pk).update(status=status)
    for name, client in clients(world).items():
        html = fragment(client, world, turn)
        assert f'data-status="{status}"' in html, name
        assert THINKING in html, name
        assert html.index('<p class="text">I open the door.</p>') < html.index(THINKING), name
        assert (stop_button(turn) in html) == (name != "other"), name
        assert 'class="undo"' not in html, name
    reloaded = clients(world)["other"].get(f"/campaigns/{world.campaign.pk}/")
    assert THINKING in reloaded.content.decode()


def test_a_turn_asked_to_stop_says_so_and_offers_stop_no_more(world: World, player_client):
    turn = turn_submit(campaign=world.campaign, actor=world.player, message="I open the door.")
    Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.RUNNING)
    turn_cancel(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner)
    html = fragment(player_client, world, turn)
    assert '<p class="thinking" role="status">Stopping the GM…</p>' in html
    assert 'class="stop"' not in html


def test_a_finished_turn_has_no_thinking_note_and_no_stop(world: World, player_client):
    done = gm_turn(world, "I look around.")
    cancelled = turn_submit(campaign=world.campaign, actor=world.player, message="I wait.")
    turn_cancel(campaign_id=world.campaign.pk, turn_id=cancelled.pk, user=world.player)
    for turn in (done, cancelled):
        html = fragment(player_client, world, turn)
        assert 'class="thinking"' not in html
        assert 'class="stop"' not in html
    assert 'class="msg role-system' in fragment(player_client, world, cancelled)


def test_an_undone_gm_turn_offers_retry_to_its_actor_and_who_may_revert(world: World):
    turn = gm_turn(world, "I attack the goblin")
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner)
    for name, client in clients(world).items():
        html = fragment(client, world, turn)
        assert "↶ player’s turn was undone by owner" in html, name
        assert (retry_button(turn) in html) == (name != "other"), name


def test_a_turn_the_gm_was_never_asked_about_offers_no_retry(world: World, player_client):
    turn = world.turn(message="Just table talk.")
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    assert 'class="retry"' not in fragment(player_client, world, turn)


def test_a_retried_turn_offers_retry_no_more_and_its_retry_is_thinking(world: World):
    turn = gm_turn(world, "I attack the goblin")
    turn_undo(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    again = turn_retry(campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player)
    for name, client in clients(world).items():
        old, new = fragment(client, world, turn), fragment(client, world, again)
        assert 'class="retry"' not in old, name
        assert "· retried below" in old and 'data-retried="1"' in old, name
        assert f'data-retry-of="{turn.pk}"' in new, name
        assert "↻ Retried: the GM answers afresh" in new, name
        assert '<p class="text">I attack the goblin</p>' in new and THINKING in new, name


class _CommitsFirst:
    """Stands for the feed's read of messages in audit.selectors: the first time the feed asks
    for messages, `writer` runs (and commits, unless it must wait for the reader) before the
    query does."""

    def __init__(self, writer: threading.Thread, read: Any) -> None:
        self.writer, self.read = writer, read

    def __call__(self, *args: Any) -> Any:
        if not self.writer.is_alive() and self.writer.ident is None:
            self.writer.start()
            self.writer.join(timeout=2)
        return self.read(*args)


@pytest.mark.django_db(transaction=True)
def test_a_turn_is_drawn_from_one_moment_while_the_gm_finishes_it(world: World, monkeypatch):
    """The GM's turn completes (its message and its status, one commit) after the feed read the
    turn and before it read the turn's messages: the fragment is from one moment, thinking with
    no reply or replied and done, never the reply beside the note that the GM is thinking (the
    page's script fills that note with the streamed narration: the reply showed twice)."""
    turn = turn_submit(campaign=world.campaign, actor=world.player, message="I open the door.")
    Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.RUNNING)
    errors: list[BaseException] = []

    def gm_finishes() -> None:
        try:
            with transaction.atomic():
                turn_close(Turn.objects.get(pk=turn.pk), status=Turn.Status.COMPLETED, text=REPLY)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    writer = threading.Thread(target=gm_finishes)
    read = audit_selectors._feed_messages
    monkeypatch.setattr(audit_selectors, "_feed_messages", _CommitsFirst(writer, read))
    html = fragment(signed_in(world.player), world, turn)
    writer.join(timeout=30)

    assert not writer.is_alive()
    replied, thinking = REPLY in html, THINKING in html
    assert replied != thinking, "the reply drawn beside the note that the GM is thinking"
    assert Turn.objects.get(pk=turn.pk).status == Turn.Status.COMPLETED or errors
    if connection.vendor == "postgresql":
        assert not errors and thinking  # readers do not block writers: committed, unseen


REPLY = "The door creaks open."
