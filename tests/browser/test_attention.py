"""On a phone (390 px) the chat sits below the board: a message or a call waiting for approval
that lands off-screen raises a chip at the bottom of the screen, and one tap brings it into view
(the approval card reachable in one tap). Screenshots: `attention/`."""

import pytest
from playwright.sync_api import expect

from campaigns.models import Campaign
from tests.browser.support import chromium, open_table, screenshot
from tests.browser.test_map_plays import sign_in
from tests.conftest import World

pytestmark = pytest.mark.browser

POST = """async ([url, body]) => {
    const csrf = document.querySelector("#say [name=csrfmiddlewaretoken]").value;
    const answer = await fetch(url, {
        method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json", "Accept": "application/json",
                  "X-CSRFToken": csrf},
        body: JSON.stringify(body),
    });
    return answer.status;
}"""


def in_view(page, selector: str) -> bool:
    return page.eval_on_selector(
        selector,
        """(node) => { const box = node.getBoundingClientRect();
                       return box.bottom > 0 && box.top < innerHeight; }""",
    )


def test_an_unseen_message_and_approval_card_are_one_tap_away_on_a_phone(
    live_world: World, asgi_server: str
):
    world = live_world
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    turn = world.turn(world.player)
    api = f"/api/campaigns/{world.campaign.pk}"
    with chromium() as browser:
        owner = sign_in(browser, asgi_server, world.owner.username, "phone")
        player = sign_in(browser, asgi_server, world.player.username, "phone")
        for page in (owner, player):
            open_table(page, world.campaign.pk)
            page.evaluate("window.scrollTo(0, 0)")  # the board: the chat is far below
        chip = owner.locator("#attention")
        expect(chip).to_be_hidden()

        assert player.evaluate(POST, [f"{api}/turns/", {"message": "I search the altar."}]) == 201
        expect(chip).to_be_visible()
        expect(chip).to_have_text("New message at the table ↓")
        screenshot(owner, "attention/01-new-message-chip.png")
        chip.tap()
        expect(chip).to_be_hidden()
        message = owner.locator("#feed .turn").last
        expect(message).to_contain_text("I search the altar.")
        assert in_view(owner, "#feed > .turn:last-child")

        owner.evaluate("window.scrollTo(0, 0)")
        held = {"tool": "modify_creature", "input": {"creature_id": world.goblin.pk, "set_hp": 0}}
        assert owner.evaluate(POST, [f"{api}/turns/{turn.pk}/tool-calls/", held]) == 202
        expect(chip).to_have_text("A call waits for approval ↓")
        screenshot(owner, "attention/02-approval-chip.png")
        chip.tap()  # one tap to the card
        expect(chip).to_be_hidden()
        card = owner.locator("#approvals .approval-card")
        expect(card).to_be_visible()
        assert in_view(owner, "#approvals .approval-card")
        expect(card.get_by_role("button", name="Approve")).to_be_visible()
        screenshot(owner, "attention/03-approval-card.png")
