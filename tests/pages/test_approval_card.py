"""The campaign page's approval card, drawn by the server for whoever looks: the diff with
Approve/Reject for approvers, Withdraw for the turn's player, a waiting note for the others."""

import pytest

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
    assert "Goblin" in html and "<td>hp</td><td>7</td><td>2</td>" in html
    assert "critical tool" in html
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
