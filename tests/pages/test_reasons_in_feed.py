"""Reasons shown to the table are shown (issue 25, point 4): an approver's note, a refusal, a
withdrawal, a revert's and a rewind's reason appear in the feed with who gave them, for every
member; a withdrawn call reads as withdrawn, not as rejected."""

import re

import pytest

from audit.services import invocation_revert, turn_rewind
from audit.services.approval import invocation_approve, invocation_reject
from tests.conftest import commit, held_hit, signed_in
from tests.pages.test_history_on_page import fragment

pytestmark = pytest.mark.django_db


def notes(html: str) -> list[str]:
    return re.findall(r'<span class="call-note">(.*?)</span>', html)


def test_a_withdrawn_call_reads_withdrawn_with_the_players_reason(world):
    held = held_hit(world, world.player)
    invocation_reject(
        campaign_id=world.campaign.pk, invocation_id=held.pk, user=world.player, reason="oops"
    )
    for viewer in (world.player, world.other, world.owner):
        html = fragment(signed_in(viewer), world, held.turn)
        assert notes(html) == ["player withdrew this call: oops"]
        assert "rejected" not in re.sub(r"<[^>]+>", " ", html)  # in no word the table reads


def test_an_approvers_refusal_and_its_reason_show_with_who(world):
    held = held_hit(world, world.player)
    invocation_reject(
        campaign_id=world.campaign.pk, invocation_id=held.pk, user=world.cogm, reason="too soon"
    )
    assert notes(fragment(signed_in(world.other), world, held.turn)) == [
        "cogm rejected this call: too soon"
    ]


def test_an_approved_call_says_who_approved_it(world):
    held = held_hit(world, world.player)
    invocation_approve(campaign_id=world.campaign.pk, invocation_id=held.pk, user=world.owner)
    assert notes(fragment(signed_in(world.player), world, held.turn)) == ["Approved by owner"]


def test_a_call_reverted_alone_shows_who_undid_it_and_why(world):
    turn = world.turn(world.player, "I move.")
    row = commit(
        world,
        "move_token",
        {"creature_id": world.hero.pk, "x": 3, "y": 3},
        actor=world.player,
        turn=turn,
    )
    invocation_revert(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner, reason="wrong cell"
    )
    assert notes(fragment(signed_in(world.other), world, turn)) == ["Undone by owner: “wrong cell”"]


def test_a_rewinds_reason_shows_on_every_turn_it_undid_with_who(world):
    first, second = world.turn(world.player, "I go left."), world.turn(world.other, "I follow.")
    turn_rewind(campaign_id=world.campaign.pk, turn_id=first.pk, user=world.owner, reason="retcon")
    for turn in (first, second):
        html = fragment(signed_in(world.player), world, turn)
        assert "was undone by owner: “retcon”" in html
