"""The fragments sent down the socket (web/feeds.py, web/pages/fragments.py `pushed_fragments`):
after an event that changed the world, every page whose socket asked for the board
(`?fragments=board`, as the page's does) is sent it as drawing it for that viewer alone would
give, the fog included, and after a message, the end or the undo of a turn (`?fragments=turn`)
that turn, with that viewer's Undo offers; the drawings stay one per class however many pages
look; a socket that did not ask (an API client) is sent events only; a drawing that fails tells
the page to fetch it."""

import asyncio
import re
import threading
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connection, connections

from audit.models import InvocationOrigin, ToolInvocation
from audit.selectors import viewer_rights
from audit.services import invocation_dispatch, turn_undo
from audit.services.approval import invocation_approve
from audit.services.hand import token_move
from audit.services.revert import invocation_revert
from campaigns.models import Campaign, Turn
from campaigns.services import membership_add
from tests.conftest import (
    World,
    call,
    commit,
    fog_over_the_goblin,
    held_hit,
    make_user,
)
from tests.pages.test_fragment_cache import (
    a_players_roll,
    alone,
    approvals_alone,
    board_alone,
    turn_alone,
    two_held_calls,
)
from tests.realtime.conftest import TIMEOUT, browser, receive_until
from web import feeds
from web.pages import fragments, presenters

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

BOARD = "?fragments=board"
TURN_SEQ = re.compile(r'data-seq="(\d+)"')


@database_sync_to_async
def goblin_hit_in_a_turn(world: World, amount: int = 2) -> None:
    turn = world.turn(world.player, "I strike the goblin.")
    commit(
        world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -amount}, turn=turn
    )


async def board_sent(socket: Any) -> str | None:
    """The events up to the board the socket is sent after them: the board's HTML."""
    return (await receive_until(socket, "fragment"))[-1]["html"]


async def turn_sent(socket: Any, turn: Any) -> str:
    """The messages up to the drawing of `turn` the socket is sent: its HTML."""
    while True:
        message = (await receive_until(socket, "fragment"))[-1]
        if message["part"] == "turn" and message["turn"] == turn.pk:
            return message["html"]


async def test_each_page_is_sent_the_board_drawn_for_its_viewer(world: World):
    await database_sync_to_async(fog_over_the_goblin)(world)
    viewers = {"owner": world.owner, "cogm": world.cogm, "player": world.player}
    pages = {name: await browser(world.campaign.pk, user, BOARD) for name, user in viewers.items()}
    api = await browser(world.campaign.pk, world.other)  # no board asked for: events only
    await goblin_hit_in_a_turn(world)

    sent = {name: await board_sent(socket) for name, socket in pages.items()}
    for name, user in viewers.items():
        assert sent[name] == await database_sync_to_async(board_alone)(world, user), name
    assert "Goblin" in sent["owner"] and "Goblin" in sent["cogm"]
    assert "Goblin" not in sent["player"]  # the fog hides it from a player's board
    assert "your character" in sent["player"] and "your character" not in sent["cogm"]
    assert [e["type"] for e in await receive_until(api, "state_changed")][-1] == "state_changed"
    for socket in (*pages.values(), api):  # one board per page, and none to the API's socket
        assert await socket.receive_nothing(timeout=0.3)
        await socket.disconnect()


async def test_the_board_is_drawn_once_per_class_however_many_pages_look(world: World):
    """The owner's board is a class of one, everyone else's a player's (the GM's sight, for a
    co-GM): the drawings per event are those classes, not one per page."""
    drawings = {}
    for players in (1, 3, 6):
        users = await database_sync_to_async(_players)(world, players)
        pages = [await browser(world.campaign.pk, u, BOARD) for u in [world.owner, *users]]
        before = fragments.renders["board"]
        await goblin_hit_in_a_turn(world)
        boards = [await board_sent(page) for page in pages]
        drawings[players + 1] = fragments.renders["board"] - before
        assert all(boards) and len(set(boards)) == 2, players  # the owner's, and the players'
        for page in pages:
            assert await page.receive_nothing(timeout=0.2)
            await page.disconnect()
    assert drawings == {2: 2, 4: 2, 7: 2}


def _players(world: World, count: int) -> list[Any]:
    """`count` players with no character (so that each is sent the players' very drawing)."""
    users = []
    for _ in range(count):
        user = make_user(f"watcher-{count}-{len(users)}")
        membership_add(campaign=world.campaign, by=world.owner, username=user.username)
        users.append(user)
    return users


async def test_a_board_that_cannot_be_drawn_is_fetched_by_the_page(world: World, monkeypatch):
    def fails(**_: Any) -> list[str]:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(feeds, "pushed_fragments", fails)
    page = await browser(world.campaign.pk, world.player, BOARD)
    await goblin_hit_in_a_turn(world)
    assert await board_sent(page) is None  # board.js fetches /board/ on a null
    await page.disconnect()


async def test_each_page_is_sent_the_turn_drawn_for_its_viewer_once_per_class(world: World):
    """The turn's actor and the GM may undo it, another player may not: three classes (the
    owner and the co-GM are one) for four pages, after its first message and after its undo."""
    viewers = {
        "owner": world.owner,
        "cogm": world.cogm,
        "player": world.player,
        "other": world.other,
    }
    pages = {
        name: await browser(world.campaign.pk, user, "?fragments=turn")
        for name, user in viewers.items()
    }
    for step in ("made", "undone"):
        before = fragments.renders["turn"]
        if step == "made":
            turn = await database_sync_to_async(world.turn)(world.player, "I sneak ahead.")
        else:
            await database_sync_to_async(turn_undo)(
                campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.player
            )
        sent = {name: await turn_sent(socket, turn) for name, socket in pages.items()}
        assert fragments.renders["turn"] - before == 3, step
        for name, user in viewers.items():
            assert sent[name] == await database_sync_to_async(turn_alone)(world, user, turn)
        assert ("undone" in sent["other"]) == (step == "undone")
        if step == "made":
            assert 'data-undoable="1"' in sent["player"]
            assert 'data-undoable="0"' in sent["other"]
    for socket in pages.values():
        assert await socket.receive_nothing(timeout=0.3)  # no board: it was not asked for
        await socket.disconnect()


async def test_a_table_slow_to_draw_holds_up_no_other(world: World, monkeypatch):
    """Each web process draws for every campaign it holds: one table's drawing stuck (a slow
    statement, a long turn to draw) does not hold up another table's board, nor a page that
    connects meanwhile."""
    elsewhere = world.foreign.campaign_id
    stuck, release = threading.Event(), threading.Event()
    real = fragments.pushed_fragments

    def pushed(**kwargs: Any) -> Any:
        if kwargs["campaign_id"] == elsewhere:
            stuck.set()
            assert release.wait(timeout=30)
        return real(**kwargs)

    monkeypatch.setattr(feeds, "pushed_fragments", pushed)
    slow = await browser(elsewhere, world.outsider, BOARD)
    page = await browser(world.campaign.pk, world.owner, BOARD)

    def hit_the_stranger() -> None:  # in a thread of its own: the push may hold any other
        try:
            commit_elsewhere(world)
        finally:
            connections.close_all()

    def hit_the_goblin() -> None:
        try:
            commit(world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -1})
        finally:
            connections.close_all()

    await asyncio.to_thread(hit_the_stranger)
    assert await asyncio.to_thread(stuck.wait, 10)
    try:
        await asyncio.to_thread(hit_the_goblin)
        assert "Goblin" in await board_sent(page)  # while the other table's drawing is stuck
        late = await browser(world.campaign.pk, world.player, BOARD)  # connects meanwhile too
    finally:
        release.set()
    assert "Stranger" in await board_sent(slow)
    for socket in (slow, page, late):
        await socket.disconnect()


def commit_elsewhere(world: World) -> None:
    row = invocation_dispatch(
        campaign=world.foreign.campaign,
        actor=world.outsider,
        tool_name="modify_creature",
        input={"creature_id": world.foreign.pk, "hp_delta": -1},
        source=InvocationOrigin.USER,
    )
    assert row.status == ToolInvocation.Status.COMMITTED, row.error


async def test_a_drawing_gives_its_connection_back(world: World):
    """The drawing runs in a thread of the executor's pool, which outlives it: its connection
    goes back to the connection pool when it ends, not to stay with the thread."""

    def in_use() -> int:
        stats = connection.pool.get_stats()
        return stats["pool_size"] - stats["pool_available"]

    pages = [await browser(world.campaign.pk, user, BOARD) for user in (world.owner, world.player)]
    await database_sync_to_async(connections.close_all)()  # the sockets' connects' (kept: the
    # test communicator keeps connections open), in the thread the test's sync work runs in
    before = in_use()  # the test's own
    feed = feeds.campaign_feed(world.campaign.pk)  # the process's feed of the campaign, this loop's
    for amount in (1, 2, 3):
        await goblin_hit_in_a_turn(world, amount)
        for page in pages:
            assert await board_sent(page)
    if feed.drawing is not None:  # sent as each part is drawn: the drawing ends a moment later
        await feed.drawing
    assert in_use() == before
    for page in pages:
        await page.disconnect()


async def test_a_held_call_and_its_answer_send_its_turn(world: World):
    """A call held and a call answered change what its turn says (what it waits for, on whom;
    who let it run): the turn is sent after each, drawn once per class."""
    pages = {
        name: await browser(world.campaign.pk, user, "?fragments=turn")
        for name, user in {"owner": world.owner, "player": world.player}.items()
    }
    row = await database_sync_to_async(held_in_a_running_turn)(world)
    for socket in pages.values():
        assert "Waiting for approval" in await sent_until(socket, row.turn, "approval_requested")
    before = fragments.renders["turn"]
    await database_sync_to_async(invocation_approve)(
        campaign_id=world.campaign.pk, invocation_id=row.pk, user=world.owner
    )
    for socket in pages.values():
        html = await sent_until(socket, row.turn, "approval_resolved")
        assert "Waiting for approval" not in html and "Goblin takes 5" in html
    assert fragments.renders["turn"] - before == 2  # the GM's sight, a player's
    for socket in pages.values():
        assert await socket.receive_nothing(timeout=0.3)
        await socket.disconnect()


def held_in_a_running_turn(world: World) -> ToolInvocation:
    """The GM's hit on the goblin held for approval, in the player's turn, which the GM is
    running (`held_hit`'s, but the turn's status a worker's)."""
    Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
    world.campaign.refresh_from_db()
    turn = world.turn(world.player, "I strike the goblin.")
    Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.RUNNING)
    row = call(
        world,
        "modify_creature",
        {"creature_id": world.goblin.pk, "hp_delta": -5},
        turn=turn,
        source=InvocationOrigin.GM,
    )
    assert row.status == ToolInvocation.Status.AWAITING_APPROVAL, row.error
    return row


async def sent_until(socket: Any, turn: Any, event: str) -> str:
    """The first drawing of `turn` the socket is sent that shows the event `event` (its
    `data-seq` at or past the event's: it may come before the event itself, when it was drawn
    after the event was committed for an earlier one): its HTML."""
    at, html = None, ""
    while at is None or not html or int(TURN_SEQ.search(html)[1]) < at:
        message = await socket.receive_json_from(timeout=TIMEOUT)
        if message["type"] == event:
            at = message["seq"]
        elif message["type"] == "fragment" and message.get("turn") == turn.pk:
            html = message["html"]
    return html


async def test_a_resumed_attempt_draws_its_turn_again_the_first_does_not():
    """A turn's first attempt changes nothing its drawing shows (its message did, already); a
    later one starts the narration again (its worker was lost, or its held call answered)."""
    started = [
        {"type": "gm_turn_started", "turn": 4, "seq": 10, "data": {"attempt": 1}},
        {"type": "gm_text_delta", "turn": 4, "seq": 11, "data": {"text": "The "}},
    ]
    assert fragments.fragments_changed(started) == {}
    resumed = {"type": "gm_turn_started", "turn": 4, "seq": 12, "data": {"attempt": 2}}
    assert fragments.fragments_changed([*started, resumed]) == {4: 12}


ENTRIES = "?fragments=roll,change"


async def entry_sent(socket: Any, kind: str, key: Any) -> str | None:
    """The messages up to the `kind` entry `key` the socket is sent: its HTML."""
    while True:
        message = (await receive_until(socket, "fragment"))[-1]
        if message["part"] == kind and message[kind] == key:
            return message["html"]


def entries_alone(world: World, user: Any, roll: Any, dragged: Any) -> tuple[str, str]:
    """The roll and the change as the feed's views drew them for `user` alone."""
    campaign = Campaign.objects.get(pk=world.campaign.pk)
    rights = viewer_rights(campaign=campaign, user=user)
    change = presenters.changes_outside_turns(
        campaign=campaign, rights=rights, invocation_id=dragged.pk
    )[0]
    entry = presenters.roll_entry(campaign=campaign, roll_id=roll.pk)
    return (
        alone(world, user, "campaigns/_roll_entry.html", {"roll": entry}),
        alone(world, user, "campaigns/_change_entry.html", {"change": change}),
    )


async def test_a_roll_and_a_change_outside_turns_are_sent_as_each_viewer_sees_them(world: World):
    """A player's roll is drawn once for everyone; a token the owner drags in the fog once for
    the GM's sight (the goblin named) and once for a player's (something happens there), and
    again once each when it is undone; a socket that did not ask is sent events only."""
    await database_sync_to_async(fog_over_the_goblin)(world)
    viewers = {"owner": world.owner, "cogm": world.cogm, "player": world.player}
    pages = {name: await browser(world.campaign.pk, u, ENTRIES) for name, u in viewers.items()}
    api = await browser(world.campaign.pk, world.other)
    fragments.renders.clear()
    roll = await database_sync_to_async(a_players_roll)(world)
    dragged = await database_sync_to_async(token_move)(
        campaign=world.campaign, creature=world.goblin, by=world.owner, x=6, y=6
    )
    sent = {}
    for name, user in viewers.items():
        sent[name] = (
            await entry_sent(pages[name], "roll", roll.pk),
            await entry_sent(pages[name], "change", str(dragged.pk)),
        )
        assert sent[name] == await database_sync_to_async(entries_alone)(
            world, user, roll, dragged
        ), name
    assert dict(fragments.renders) == {"roll": 1, "change": 2}
    assert "Goblin" in sent["owner"][1] and "Goblin" not in sent["player"][1]

    await database_sync_to_async(invocation_revert)(
        campaign_id=world.campaign.pk, invocation_id=dragged.pk, user=world.owner
    )
    for name, user in viewers.items():
        undone = await entry_sent(pages[name], "change", str(dragged.pk))
        _, alone_now = await database_sync_to_async(entries_alone)(world, user, roll, dragged)
        assert undone == alone_now and "undone" in undone, name
    assert dict(fragments.renders) == {"roll": 1, "change": 4}
    for socket in pages.values():
        assert await socket.receive_nothing(timeout=0.3)
        await socket.disconnect()
    received = [e["type"] for e in await receive_until(api, "invocation_reverted")]
    assert "fragment" not in received and "dice_rolled" in received
    await api.disconnect()


async def approvals_sent(socket: Any, event: str) -> str:
    """The card the socket is sent once the event `event` has arrived and the card's `data-seq`
    shows it: its HTML."""
    at, html = None, ""
    while at is None or not html or int(TURN_SEQ.search(html)[1]) < at:
        message = await socket.receive_json_from(timeout=TIMEOUT)
        if message["type"] == event:
            at = message["seq"]
        elif message["type"] == "fragment" and message["part"] == "approvals":
            html = message["html"]
    return html


async def test_the_approval_card_is_sent_to_each_page_once_per_set_of_buttons(world: World):
    """Two calls held in one turn and then one answered: each page is sent the card as the view
    draws it for its viewer alone, drawn once for each set of buttons (the GM's sight with
    Approve, the calls' own player with Withdraw, the hero's player with Object, the rest
    waiting); a socket that did not ask is sent events only."""
    viewers = {
        "owner": world.owner,
        "cogm": world.cogm,
        "player": world.player,
        "other": world.other,
        **{user.username: user for user in await database_sync_to_async(_players)(world, 2)},
    }
    asked = "?fragments=approvals"
    pages = {name: await browser(world.campaign.pk, u, asked) for name, u in viewers.items()}
    api = await browser(world.campaign.pk, world.other)
    fragments.renders.clear()
    goblin, hero = await database_sync_to_async(two_held_calls)(world)
    sent = {
        name: await approvals_sent(socket, "approval_requested") for name, socket in pages.items()
    }
    # both calls are in the cards sent after the second one's event
    for name, user in viewers.items():
        assert sent[name] == await database_sync_to_async(approvals_alone)(world, user), name
    assert sent["owner"].count('value="approve"') == 2 and "Withdraw" in sent["other"]
    assert "objection" in sent["player"] and "objection" not in sent["cogm"]
    assert fragments.renders["approvals"] <= 8  # 4 classes, once for each of the two events

    fragments.renders.clear()
    await database_sync_to_async(invocation_approve)(
        campaign_id=world.campaign.pk, invocation_id=goblin.pk, user=world.owner
    )
    for name, user in viewers.items():
        html = await approvals_sent(pages[name], "approval_resolved")
        assert html == await database_sync_to_async(approvals_alone)(world, user), name
        assert f'data-invocation="{goblin.pk}"' not in html
        assert f'data-invocation="{hero.pk}"' in html
    assert fragments.renders["approvals"] == 4
    for socket in pages.values():
        await socket.disconnect()
    received = [e["type"] for e in await receive_until(api, "approval_resolved")]
    assert "fragment" not in received and "approval_requested" in received
    await api.disconnect()


async def test_each_part_is_sent_as_soon_as_it_is_drawn(world: World, monkeypatch):
    """A held call changes its turn and the approval card: the card is sent while its turn is
    still being drawn, not after it."""
    blocking, stuck, release = threading.Event(), threading.Event(), threading.Event()
    real = presenters.feed_read

    def slow(**kwargs: Any) -> Any:
        if blocking.is_set():
            stuck.set()
            assert release.wait(timeout=30)
        return real(**kwargs)

    monkeypatch.setattr(presenters, "feed_read", slow)
    page = await browser(world.campaign.pk, world.owner, "?fragments=turn,approvals")
    turn = await database_sync_to_async(world.turn)(world.other, "I charge.")
    assert await turn_sent(page, turn)  # its first message's drawing, not held up
    blocking.set()

    @database_sync_to_async
    def hold_a_hit() -> None:
        Campaign.objects.filter(pk=world.campaign.pk).update(approval_policy="critical")
        world.campaign.refresh_from_db()
        held = {"creature_id": world.goblin.pk, "hp_delta": -5}
        row = call(world, "modify_creature", held, actor=world.other, turn=turn)
        assert row.status == ToolInvocation.Status.AWAITING_APPROVAL, row.error

    await hold_a_hit()
    try:
        card = await approvals_sent(page, "approval_requested")
        assert 'value="approve"' in card
        assert await asyncio.to_thread(stuck.wait, TIMEOUT)  # the turn's drawing, held back
    finally:
        release.set()
    assert "awaiting approval" in await turn_sent(page, turn)
    await page.disconnect()


async def test_a_part_that_cannot_be_drawn_is_fetched_the_others_are_sent(
    world: World, monkeypatch
):
    """The turn's drawing fails after the card's was sent: the page keeps the card and is told
    to fetch the turn (`html` null), not the card again."""
    page = await browser(world.campaign.pk, world.owner, "?fragments=turn,approvals")

    def fails(**_: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(presenters, "feed_read", fails)
    await database_sync_to_async(held_hit)(world, world.other)
    sent = []  # (part, html), in the order sent, until the turn's failure after the card
    while not (sent and sent[-1] == ("turn", None) and any(p == "approvals" for p, _ in sent)):
        message = await page.receive_json_from(timeout=TIMEOUT)
        if message["type"] == "fragment":
            sent.append((message["part"], message["html"]))
    turns = [html for part, html in sent if part == "turn"]
    cards = [html for part, html in sent if part == "approvals"]
    assert turns and set(turns) == {None}  # its first message's and the held call's drawings
    assert len(cards) == 1 and 'value="approve"' in cards[0]  # the card, drawn once
    assert await page.receive_nothing(timeout=0.3)
    await page.disconnect()


async def test_a_turn_sent_to_the_gm_and_a_player_reads_each_through_their_sight(world: World):
    """One read of the turn serves every class of one push: the GM's drawing names the goblin
    in the fog, the player's (drawn in the same push) does not."""

    @database_sync_to_async
    def hit_in_the_fog() -> Turn:
        fog_over_the_goblin(world)
        turn = world.turn(world.owner, "The goblin is struck from the dark.")
        commit(
            world, "modify_creature", {"creature_id": world.goblin.pk, "hp_delta": -2}, turn=turn
        )
        return turn

    turn = await hit_in_the_fog()
    viewers = {"owner": world.owner, "player": world.player}
    pages = {
        name: await browser(world.campaign.pk, u, "?fragments=turn") for name, u in viewers.items()
    }
    await database_sync_to_async(turn_undo)(
        campaign_id=world.campaign.pk, turn_id=turn.pk, user=world.owner
    )
    sent = {name: await turn_sent(socket, turn) for name, socket in pages.items()}
    for name, user in viewers.items():
        assert sent[name] == await database_sync_to_async(turn_alone)(world, user, turn), name
    assert "Goblin" in sent["owner"] and "Goblin" not in sent["player"]
    for socket in pages.values():
        await socket.disconnect()
