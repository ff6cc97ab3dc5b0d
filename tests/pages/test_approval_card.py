"""The campaign page's approval card, drawn by the server for whoever looks: the diff with
Approve/Reject for approvers, Withdraw for the turn's player, a waiting note for the others."""

import re

import pytest
from django.test import override_settings

from audit.services.approval import invocation_approve, invocation_expire, invocation_reject
from campaigns.models import Creature
from tests.conftest import held_hit, signed_in


@pytest.fixture
def held(world):
    return held_hit(world, world.player, model="anthropic/claude-sonnet-4-5")


def card(world, user) -> str:
    response = signed_in(user).get(f"/campaigns/{world.campaign.pk}/approvals/")
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize(
    "who,buttons",
    [
        ("owner", ["Approve", "Reject"]),
        ("cogm", ["Approve", "Reject"]),
        ("player", ["Withdraw"]),
        ("other", []),
    ],
)
def test_each_person_sees_the_diff_and_only_the_buttons_they_may_use(world, held, who, buttons):
    html = card(world, getattr(world, who))
    assert "Goblin takes 5 damage (7 → 2)" in html
    assert "Modify creature is a critical tool" in html
    # The raw fields, folded, for those who run the table; a player reads no internal name.
    raw = f"<td><code>creature:{world.goblin.pk}</code></td><td><code>hp</code></td>"
    assert (raw in html) is (who in ("owner", "cogm"))
    assert ("modify_creature" in html) is (who in ("owner", "cogm"))
    shown = [b for b in ("Approve", "Reject", "Withdraw") if f">{b}</button>" in html]
    assert shown == buttons
    assert ("Waiting for the GM" in html) is (not buttons)


def test_no_card_when_nothing_waits_and_404_for_strangers(world):
    assert 'data-count="0"' in card(world, world.owner)
    response = signed_in(world.outsider).get(f"/campaigns/{world.campaign.pk}/approvals/")
    assert response.status_code == 404


def test_the_page_carries_the_slot_and_the_script(world):
    html = signed_in(world.player).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    assert 'id="approvals"' in html and "js/table.js" in html


CALL = re.compile(
    r'<li class="call status-(?P<status>[a-z_]+)"[^>]*><span class="summary">(?P<summary>[^<]*)'
    r'</span>(?:<span class="provenance">[^<]*</span>)?'
    r'(?:<span class="call-status">(?P<label>[^<]*)</span>)?'
)


def feed_calls(world) -> list[tuple[str, str]]:
    """The calls the page's feed draws, as (status, label)."""
    html = signed_in(world.player).get(f"/campaigns/{world.campaign.pk}/").content.decode()
    return [(m["status"], m["label"] or "") for m in CALL.finditer(html)]


def answer(world, held, how: str) -> None:
    ids = {"campaign_id": world.campaign.pk, "invocation_id": held.pk}
    if how == "approved":
        invocation_approve(**ids, user=world.owner)
    elif how == "rejected":
        invocation_reject(**ids, user=world.owner, reason="not yet")
    elif how == "expired":
        with override_settings(APPROVAL_TIMEOUT=1e-6):  # its deadline has passed
            invocation_expire(invocation_id=held.pk)


@pytest.mark.parametrize(
    "how,shown",
    [
        ("waiting", [("awaiting_approval", "awaiting approval")]),
        # Approved, it ran as a row of its own: the feed shows that one call, done.
        ("approved", [("committed", "")]),
        ("rejected", [("rejected", "not done")]),
        ("expired", [("expired", "not approved in time: not done")]),
    ],
)
def test_the_feed_shows_a_held_call_once_as_what_became_of_it(world, held, how, shown):
    answer(world, held, how)
    assert feed_calls(world) == shown
    assert Creature.objects.get(pk=world.goblin.pk).hp == (2 if how == "approved" else 7)
