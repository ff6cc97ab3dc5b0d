"""Rewind and redo on the campaign page (issue 25, point 4): "Rewind to here" beside the
dependency-based "Undo this and what depends on it", its dialog drawn by the server from the
rewind plan, and "Redo as it was" on an undone turn."""

import re

import pytest

from audit.models import SecurityEvent
from audit.services import turn_undo
from audit.services.redo import turn_redo
from core.errors import Conflict
from gm.services import turn_retry
from tests.audit.test_redo import gm_turn
from tests.audit.test_rewind import three_turns
from tests.conftest import signed_in
from tests.pages.test_history_on_page import fragment

pytestmark = pytest.mark.django_db


def offered(html: str, what: str) -> set[int]:
    return {int(pk) for pk in re.findall(rf'data-{what}="(\d+)">', html)}


def rewind_plan(client, world, turn):
    return client.get(f"/campaigns/{world.campaign.pk}/rewind-plan/?turn={turn.pk}")


def test_rewind_to_here_stands_beside_the_relabelled_dependency_undo(world):
    table = three_turns(world)
    page = signed_in(world.owner).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    earlier = [table.earlier.pk, *(t.pk for t in table.turns[:2])]
    assert offered(page, "rewind") == set(earlier)
    assert offered(page, "undo-from") == set(earlier)
    assert "⇤ Rewind to here" in page and "↶ Undo this and what depends on it" in page
    assert "Undo from here" not in page
    # The player may not revert the other player's later turn: neither is offered.
    player_page = signed_in(world.player).get(f"/campaigns/{world.campaign.pk}/").content
    assert offered(player_page.decode(), "rewind") == set()


def test_the_rewind_dialog_names_the_turns_that_go_and_every_change(world):
    table = three_turns(world)
    response = rewind_plan(signed_in(world.owner), world, table.first)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Rewind to before player’s turn: ‘I attack the goblin.’?" in html
    turns = re.findall(r"<li>(.*?)</li>", html.split('class="rewind-turns"')[1].split("</ol>")[0])
    assert turns == [
        "other’s turn: ‘I step aside.’",
        "owner’s turn",
        "player’s turn: ‘I attack the goblin.’",
    ]
    assert "Goblin takes 2 damage (7 → 5)" in html
    assert "Thorin moves from 2,2 to 4,4" in html  # the player’s drag, in no turn
    assert 'data-blocked="0"' in html


def test_a_player_asking_for_the_dialog_reads_what_blocks_it_recorded(world):
    table = three_turns(world)
    response = rewind_plan(signed_in(world.player), world, table.first)
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/plain")
    assert "other’s turn" in response.content.decode()
    assert SecurityEvent.objects.filter(user=world.player).count() == 1


def test_a_stranger_and_a_bad_turn_get_404(world):
    table = three_turns(world)
    assert rewind_plan(signed_in(world.outsider), world, table.first).status_code == 404
    bad = signed_in(world.owner).get(f"/campaigns/{world.campaign.pk}/rewind-plan/?turn=x")
    assert bad.status_code == 404


def test_redo_is_offered_on_an_undone_turn_once_and_the_redone_turn_says_so(world):
    played = gm_turn(world)
    turn_undo(campaign_id=world.campaign.pk, turn_id=played.turn.pk, user=world.owner)
    html = fragment(signed_in(world.player), world, played.turn)
    assert offered(html, "redo") == {played.turn.pk}
    assert offered(fragment(signed_in(world.other), world, played.turn), "redo") == set()
    redone = turn_redo(campaign_id=world.campaign.pk, turn_id=played.turn.pk, user=world.player)
    html = fragment(signed_in(world.player), world, played.turn)
    assert offered(html, "redo") == set() and offered(html, "retry") == set()
    assert "· redone below" in html
    assert "↷ Redone: put back as it was" in fragment(signed_in(world.other), world, redone)


def test_a_redone_turn_is_not_retried(world):
    played = gm_turn(world)
    turn_undo(campaign_id=world.campaign.pk, turn_id=played.turn.pk, user=world.owner)
    turn_redo(campaign_id=world.campaign.pk, turn_id=played.turn.pk, user=world.owner)
    with pytest.raises(Conflict, match="redone"):
        turn_retry(campaign_id=world.campaign.pk, turn_id=played.turn.pk, user=world.owner)
