"""The page's live fragments, drawn once per event for each class of viewer.

After an event every page at the table asks for the fragments the event changed: the board, a
turn of the feed (static/js/table/board.js, feed.js). What one of them shows depends on who asks
only through a few facts: the GM's sight or a player's, whether they own the table, whether they
may undo this turn and the later ones. Those facts are the viewer's class (`board_class`,
`turn_class`), and a fragment is drawn once per (campaign, event number, class) and kept in the
`fragments` cache: every other viewer of that class is sent the same HTML. A table of five
draws each change once for the GM and once for the players, not once per socket.

Why an event number is the version: every change to what a fragment shows is announced by an
event (the page refetches on nothing else), and each such event raises the campaign's
`drawn_seq`: every event does but the GM's streamed words, which change no drawing (the script
writes them), so a turn streaming its narration does not make the table's fragments drawn anew.
A newer event means a new key and older entries age out (`FRAGMENT_TTL`). A drawing is never
older than its key: the number is read before the world is. What changes without an event is in
the key itself (a turn's Stop: its status and `cancel_requested_at`).

The board names its viewer in two places: the tokens of their own characters (theirs to drag,
"your character") and the list of their characters. It is drawn for the class with nobody in
particular (`Rights.alike`), and with it, for each player with a character on the board, their
own pieces as they see them (`Rights.as_user`): each page of the class is then the class's
drawing with its viewer's pieces put in place of the class's (`_with_own_pieces`), a few
replacements and no drawing. A roll, a change outside any
turn and a creature added ask only the viewer's sight, or nothing (`for_sight`). The approval
card's class is the viewer's sight and which of each held call's buttons are theirs
(web/pages/approvals.py). The full page and the whole feed (`/feed/`, after a gap in the events)
are drawn per request.

The board, a turn, a player's roll, a change outside any turn and the approval card are not even
asked for after the events that change them for everyone (`BOARD_EVENTS`, `TURN_EVENTS`,
`_entry`, `APPROVAL_EVENTS`): each
server process's feed of the campaign draws them for every page it holds that asked for them
when its socket connected (`pushed_fragments`, from `web.feeds`) and sends them down the
socket: one drawing per class as above, each page's own pieces, no request per page.
`/board/`, `/feed/?turn=` (`?roll=`, `?change=`) and `/approvals/` stay for the page's first
sight, a resync after a gap, a drawing that failed, and the events a page alone knows it must
draw again.

Django serves each request in a thread of its own, and the five pages of a table ask for a
fragment at the same moment: the first request of a process to miss draws it while the others
of that process wait for the drawing, and those of the other web processes see its claim in
the cache and wait for it too (`_kept`): a class costs one drawing, not one per process or per
page that asked before the first finished. `renders` counts the drawings, for the
tests.
"""

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

from django.core.cache import caches
from django.template.loader import render_to_string

from audit.selectors import Rights
from campaigns.models import Campaign, Turn
from campaigns.selectors import BoardWorld, board_world, campaign_fresh
from core.errors import NotFound
from web.pages import approvals as cards
from web.pages import board as boards
from web.pages import presenters

FRAGMENT_TTL = 300  # seconds: a few events later nobody asks for an old number's drawing again
DRAW_WAIT = 2  # seconds a request waits for another process's drawing before it draws its own
DRAW_POLL = 0.005  # seconds between its looks (a drawing takes 10-50 ms)
renders: Counter = Counter()  # fragment -> drawings made in this process
_drawing: dict[str, threading.Lock] = {}  # key -> held while a request of this process draws it
_drawing_guard = threading.Lock()


def _cache() -> Any:
    return caches["fragments"]


# A fragment's drawing for a class of viewer: the fragment, the class, and how to draw it.
Drawing = tuple[str, str, Callable[[], Any]]


def _key(campaign: Campaign, fragment: str, viewer: str) -> str:
    return f"fragment:{campaign.pk}:{campaign.drawn_seq}:{fragment}:{viewer}"


def _counted(fragment: str, draw: Callable[[], Any]) -> Callable[[], Any]:
    def counted() -> Any:
        value = draw()
        renders[fragment.split(":", 1)[0]] += 1
        return value

    return counted


def drawn(*, campaign: Campaign, fragment: str, viewer: str, draw: Callable[[], Any]) -> Any:
    """The fragment `fragment` of `campaign` for the viewer class `viewer` at the campaign's
    current event number: from the cache, or drawn by `draw` (and kept)."""
    return _kept(_key(campaign, fragment, viewer), _counted(fragment, draw))


def _kept(key: str, make: Callable[[], Any]) -> Any:
    """The cache's value for `key`, or `make()`'s, kept. The pages of a table ask at the same
    moment, each request in a thread of its own and the requests spread over the web
    processes: the first to miss makes it, and the others of this process wait for it rather
    than make it too (`_drawing`), as do those of the other processes (`_made_elsewhere`)."""
    kept = _cache().get(key)
    if kept is not None:
        return kept
    with _drawing_guard:
        drawing = _drawing.setdefault(key, threading.Lock())
    try:
        with drawing:
            kept = _cache().get(key)  # made meanwhile by the request this one waited for
            if kept is None:
                kept = _made_elsewhere(key)
            if kept is None:
                kept = _make(key, make)
    finally:
        with _drawing_guard:
            if _drawing.get(key) is drawing:
                del _drawing[key]
    return kept


def _make(key: str, make: Callable[[], Any]) -> Any:
    """`make()`, kept, by the request or push that claimed the drawing of `key`. A claim whose
    drawing failed is withdrawn, so the other processes need not wait for it; a kept one is left
    to lapse (DRAW_WAIT), a Redis command less per drawing: whoever looks for `key` next finds
    the drawing before they would look at the claim."""
    try:
        kept = make()
        _cache().set(key, kept, FRAGMENT_TTL)
    except BaseException:
        _cache().delete(f"{key}:drawing")
        raise
    return kept


def _kept_all(
    makes: dict[str, Callable[[], Any]], looked_up: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`_kept` for several keys at once, for a push: one lookup for all of them (or what the
    push's one lookup of every part's keys found, `looked_up`), then each
    that nobody is drawing drawn here first, and only then those another request or process
    is drawing waited for (as `_kept` waits), by which time they are most likely kept. The web
    processes each push the same event to the pages they hold: each draws what the other is
    not drawing yet, rather than both waiting on one drawing after another."""
    if looked_up is None:
        looked_up = dict(_cache().get_many(list(makes)))
    found = {key: looked_up[key] for key in makes if key in looked_up}
    busy = []
    for key, make in makes.items():
        if key in found:
            continue
        kept = _made_if_free(key, make)
        if kept is None:
            busy.append(key)
        else:
            found[key] = kept
    for key in busy:
        found[key] = _kept(key, makes[key])
    return found


def _made_if_free(key: str, make: Callable[[], Any]) -> Any:
    """`make()`, kept, when no request of this process nor any other process is drawing
    `key` (this push claims it); else None."""
    with _drawing_guard:
        if key in _drawing:
            return None
        drawing = _drawing[key] = threading.Lock()
        drawing.acquire()
    try:
        if not _cache().add(f"{key}:drawing", 1, DRAW_WAIT):
            return None
        return _make(key, make)
    finally:
        drawing.release()
        with _drawing_guard:
            if _drawing.get(key) is drawing:
                del _drawing[key]


def _made_elsewhere(key: str) -> Any:
    """What another process is making for `key`, once it is kept; None when this request is to
    make it: it claimed the drawing (an atomic add: Redis's SET NX), or the process that had
    did not keep it within DRAW_WAIT (it died or failed: the claim only lasts DRAW_WAIT)."""
    if _cache().add(f"{key}:drawing", 1, DRAW_WAIT):
        return None
    deadline = time.monotonic() + DRAW_WAIT
    while time.monotonic() < deadline:
        time.sleep(DRAW_POLL)
        kept = _cache().get(key)
        if kept is not None:
            return kept
    return None


def world(campaign: Campaign) -> BoardWorld:
    """The campaign's state dump at its current event number, read once for every class's
    board (each draws it as its sight sees it; the dump is most of what a drawing costs), with
    the number of the last event it reflects, read before it: `campaign` is the row whose
    `drawn_seq` makes the key, read before the world (`board_world`: its members and background
    in the same statement)."""

    return _kept(
        f"fragment:{campaign.pk}:{campaign.drawn_seq}:board", partial(board_world, campaign)
    )


def for_sight(
    *, campaign: Campaign, rights: Rights | None, fragment: str, draw: Callable[[], str]
) -> str:
    """A fragment whose drawing asks of its viewer only their sight (a change outside any turn,
    a creature added), or nothing at all (`rights` None: a player's roll)."""
    return drawn(campaign=campaign, fragment=fragment, viewer=sight_class(rights), draw=draw)


def sight_class(rights: Rights | None) -> str:
    """The class of a viewer whose drawing asks only their sight; "everyone" when it asks
    nothing of them (`rights` None)."""
    return rights.sight.value if rights is not None else "everyone"


# ---- the board ------------------------------------------------------------------------------

# The events after which the board is drawn again: the world changed, or who is at the table.
BOARD_EVENTS = frozenset(
    {"state_changed", "invocation_reverted", "interaction_reverted", "member_added"}
)


def board_class(rights: Rights) -> str:
    """The owner sees the members and the invites: a class of one. Everyone else is the GM's
    sight (a co-GM, staff) or a player's."""
    return "owner" if rights.owner else rights.sight.value


def board(*, campaign: Campaign, rights: Rights) -> str:
    """The board fragment for this viewer: the class's drawing, with their own pieces."""
    fragment, viewer, draw = _board_drawing(campaign, rights)
    kept = drawn(campaign=campaign, fragment=fragment, viewer=viewer, draw=draw)
    return _board_for(kept, viewer, rights)


def _board_for(kept: Any, viewer: str, rights: Rights) -> str:
    """The class's kept board as this viewer sees it: the owner's is theirs alone."""
    return kept if viewer == "owner" else _with_own_pieces(kept, rights)


def _board_drawing(campaign: Campaign, rights: Rights) -> Drawing:
    viewer = board_class(rights)
    if viewer == "owner":
        return "board", viewer, lambda: _draw_board(campaign, rights)
    return "board", viewer, lambda: _draw_board_for_class(campaign, rights.alike())


def _draw_board(campaign: Campaign, rights: Rights) -> str:
    context = presenters.board_parts(campaign=campaign, rights=rights, world=world(campaign))
    return render_to_string("campaigns/_board.html", context)


def _draw_board_for_class(campaign: Campaign, alike: Rights) -> dict[str, Any]:
    """The board as anyone of the class sees it, and for each player with characters on it the
    pieces that name them: each character's token (and its choice in a stack's picker) as the
    class sees it and as its player sees it, and the list of their characters, drawn here once
    for every page of the class (each page's own pieces are then a few replacements)."""
    context = presenters.board_parts(campaign=campaign, rights=alike, world=world(campaign))
    own: dict[str, dict[str, Any]] = {}
    creatures = {c["id"]: c for c in context["seen"]["creatures"]}
    for token in context["board"]["map"]["tokens"]:
        c = creatures[token["id"]]
        if c["kind"] != "pc" or c["controlled_by_id"] is None:
            continue
        player = own.setdefault(str(c["controlled_by_id"]), {"pieces": [], "creatures": []})
        classes = token["classes"].split()
        hidden = frozenset([c["id"]]) if "in-fog" in classes else frozenset()
        theirs = boards.map_token(
            c,
            hidden,
            c["id"] if "active" in classes else None,
            rights=alike.as_user(c["controlled_by_id"]),
        )
        theirs["stack"] = token["stack"]
        player["creatures"].append(c)
        player["pieces"].append(
            {
                "token": (_token_html(token), _token_html(theirs)),
                "choice": (_choice_html(token), _choice_html(theirs))
                if token["stack"] > 1
                else None,
            }
        )
    for player in own.values():
        player["characters"] = _characters_html(player.pop("creatures"))
    return {
        "html": render_to_string("campaigns/_board.html", context),
        "own": own,
        "no_characters": _characters_html([]),
    }


def _token_html(token: dict[str, Any]) -> str:
    return render_to_string("campaigns/_map_token.html", {"t": token})


def _choice_html(token: dict[str, Any]) -> str:
    return render_to_string("campaigns/_map_stack_choice.html", {"t": token})


def _characters_html(characters: list[dict[str, Any]]) -> str:
    return render_to_string(
        "campaigns/_my_characters.html", {"setup": {"my_characters": characters}}
    )


def _with_own_pieces(kept: dict[str, Any], rights: Rights) -> str:
    """The class's board with this viewer's own characters drawn for them: their tokens (which
    they may drag, "your character"), their picker choices and the list of their characters,
    each put in place of the class's drawing of it."""
    html = kept["html"]
    player = kept["own"].get(str(rights.user.pk))
    if player is None:
        return html
    for piece in player["pieces"]:
        for drawn in (piece["token"], piece["choice"]):
            if drawn is not None:
                html = html.replace(drawn[0], drawn[1], 1)
    return html.replace(kept["no_characters"], player["characters"], 1)


# ---- a turn of the feed ---------------------------------------------------------------------


def turn_class(*, rights: Rights, turn: Turn, onwards: bool, from_here: bool) -> str:
    """What a turn's drawing asks of its viewer: the GM's sight or a player's, whether they may
    undo it, and from it onwards; with what of the turn may change without an event (a Stop
    asked for)."""
    asked = turn.cancel_requested_at.isoformat() if turn.cancel_requested_at else ""
    return ":".join(
        [
            rights.sight.value,
            str(int(rights.reverts(turn.actor_id))),
            str(int(onwards)),
            str(int(from_here)),
            turn.status,
            asked,
        ]
    )


def turn(*, campaign: Campaign, rights: Rights, turn_id: int) -> str | None:
    """One turn of the feed for this viewer, or None when there is no such turn to show."""
    read = presenters.turn_read(campaign=campaign, turn_id=turn_id)
    if read is None:
        return None
    fragment, viewer, draw = _turn_drawing(campaign, rights, read)
    return drawn(campaign=campaign, fragment=fragment, viewer=viewer, draw=draw) or None


def _turn_drawing(
    campaign: Campaign,
    rights: Rights,
    read: presenters.TurnRead,
    feed_read: Callable[[], presenters.FeedRead] | None = None,
) -> Drawing:
    """The turn's drawing for this viewer's class: from `feed_read()` when a push draws it for
    several classes (one read for all of them), else read for this viewer; either way the
    later turns' actors are `read`'s, which the class's key was made of."""
    turn_id = read.turn.pk

    def draw() -> str:
        if feed_read is None:
            shared = presenters.feed_read(campaign=campaign, viewers=[rights], turn=read)
        else:
            shared = feed_read()
        turns = presenters.feed(campaign=campaign, rights=rights, turn_id=turn_id, read=shared)
        if not turns:
            return ""
        # `data-seq`: the event number of the key, read before the turn (the page skips a fetch
        # that a drawing on its way already answers: static/js/table/feed.js)
        return render_to_string(
            "campaigns/_turn.html", {"turn": turns[0], "seq": campaign.drawn_seq}
        )

    facts = presenters.turn_facts(read=read, rights=rights)
    return f"turn:{turn_id}", turn_class(rights=rights, **facts), draw


# ---- the approval card -------------------------------------------------------------------


def approvals(*, campaign: Campaign, rights: Rights) -> str:
    """The approval card as the person `rights` are of sees it (the held calls, or none)."""
    fragment, viewer, draw = _approvals_drawing(
        campaign, rights, cards.held_calls(campaign=campaign)
    )
    return drawn(campaign=campaign, fragment=fragment, viewer=viewer, draw=draw)


def _approvals_drawing(campaign: Campaign, rights: Rights, held: cards.HeldCalls) -> Drawing:
    def draw() -> str:
        shown = cards.approval_cards(campaign=campaign, rights=rights, held=held)
        # `data-seq`: the key's event number (static/js/table/approval.js keeps the newest)
        context = {"approvals": shown, "campaign": campaign, "seq": campaign.drawn_seq}
        return render_to_string("campaigns/_approval.html", context)

    fragment = f"approvals:{cards.held_digest(campaign, held)}"
    return fragment, cards.approval_class(rights, held), draw


# ---- an entry of the feed outside any turn --------------------------------------------------


def roll(*, campaign: Campaign, roll_id: int) -> str:
    """A roll of the feed, drawn once for everyone: inside its turn for the GM's, an entry of
    its own for a player's; "" when the campaign has no such roll."""
    fragment, viewer, draw = _roll_drawing(campaign, roll_id)
    return drawn(campaign=campaign, fragment=fragment, viewer=viewer, draw=draw)


def _roll_drawing(campaign: Campaign, roll_id: int) -> Drawing:
    def draw() -> str:
        try:
            entry = presenters.roll_entry(campaign=campaign, roll_id=roll_id)
        except NotFound:
            return ""
        template = "campaigns/_roll.html" if entry.turn_id else "campaigns/_roll_entry.html"
        return render_to_string(template, {"roll": entry})

    return f"roll:{roll_id}", sight_class(None), draw


def change(*, campaign: Campaign, rights: Rights, invocation_id: str) -> str:
    """A change made outside any turn (a token dragged), one entry of the feed, in the words
    the viewer's sight may read; "" when there is no such change."""
    fragment, viewer, draw = _change_drawing(campaign, rights, invocation_id)
    return drawn(campaign=campaign, fragment=fragment, viewer=viewer, draw=draw)


def _change_drawing(campaign: Campaign, rights: Rights, invocation_id: str) -> Drawing:
    def draw() -> str:
        found = presenters.changes_outside_turns(
            campaign=campaign, rights=rights, invocation_id=invocation_id
        )
        return (
            render_to_string("campaigns/_change_entry.html", {"change": found[0]}) if found else ""
        )

    return f"change:{invocation_id}", sight_class(rights), draw


# ---- sent down the sockets ------------------------------------------------------------------

# The events after which their turn is drawn again for every page: a message in it (the first
# one makes the turn), its end, its undo, a call of it held (the turn says what it waits for,
# on whom) or answered (who let it run or refused it, and why). (Each page asks for a turn again
# on other events too, depending on what it shows: static/js/table/feed.js, waiting.js.)
ENTRIES = frozenset({"roll", "change"})  # the entries outside any turn sent down the socket
APPROVAL_EVENTS = frozenset({"approval_requested", "approval_resolved"})  # the card changed

TURN_EVENTS = frozenset(
    {
        "message_created",
        "gm_turn_completed",
        "interaction_reverted",
        "approval_requested",
        "approval_resolved",
    }
)


# A part of the page sent down the socket, as `fragments_changed` names it: "board", a turn's
# id, or ("roll", its id) and ("change", its invocation's id) for an entry outside any turn.
Part = str | int | tuple[str, Any]


def part_of(key: Part) -> str:
    """Which of the fragments a page may ask to be sent (`?fragments=`) the part is."""
    if key in ("board", "approvals"):
        return key
    return key[0] if isinstance(key, tuple) else "turn"


def fragments_changed(events: list[dict[str, Any]]) -> dict[Part, int]:
    """What a batch of events changed of the fragments sent down the sockets: "board", the ids
    of the turns to draw again, a player's roll and a change outside any turn (made, or undone
    alone), "approvals", each with the number of the last event that did."""
    changed: dict[Part, int] = {}
    for e in events:
        if e["type"] in BOARD_EVENTS:
            changed["board"] = e["seq"]
        if e["type"] in APPROVAL_EVENTS:
            changed["approvals"] = e["seq"]
        if e.get("turn") is not None and (e["type"] in TURN_EVENTS or _resumed(e)):
            changed[int(e["turn"])] = e["seq"]
        elif e.get("turn") is None and (entry := _entry(e)) is not None:
            changed[entry] = e["seq"]
    return changed


def _entry(event: dict[str, Any]) -> tuple[str, Any] | None:
    """The entry outside any turn an event draws (static/js/table/feed.js): a player's roll, a
    token dragged by hand, the undo of such a change."""
    if event["type"] == "dice_rolled" and (event.get("data") or {}).get("id") is not None:
        return "roll", int(event["data"]["id"])
    if not event.get("invocation"):
        return None
    if event["type"] == "state_changed" and event.get("source") == "user":
        return "change", event["invocation"]
    if event["type"] == "invocation_reverted":
        return "change", event["invocation"]
    return None


def _resumed(event: dict[str, Any]) -> bool:
    """A turn's attempt after the first (its worker was lost, or its held call answered): it
    tells its narration again from the start, and is drawn again."""
    return event["type"] == "gm_turn_started" and (event.get("data") or {}).get("attempt", 1) > 1


def pushed_fragments(
    *,
    campaign_id: Any,
    viewers: list[tuple[Rights, frozenset[str]]],
    changed: dict[Part, int],
    sent: Callable[[Part, list[list[dict[str, Any]]]], None] | None = None,
) -> tuple[int, list[list[dict[str, Any]]]]:
    """For each viewer (the rights read when their socket connected, and which fragments their
    page asked for), the `fragment` messages of what changed ("board", turn ids, entries,
    "approvals"), drawn for them at the campaign's current event number, which comes first
    (every event up to it is in the drawings). Read once for all of them: the campaign, each
    turn (and its feed, once for every class: `presenters.feed_read`), and every class's
    drawing, looked up in one go (or drawn: `_kept_all`), so that a viewer more costs no query
    and no cache lookup. A turn they may not see is not sent.

    The parts are drawn one after the other, the board first and the turns (the costliest)
    last; `sent(part, messages)` is told each part's messages for every viewer as soon as it is
    drawn, so that a card or a board does not wait for a turn drawn in the same push."""
    campaign = campaign_fresh(campaign_id=campaign_id)
    turns = sorted(t for t in changed if part_of(t) == "turn")
    # the entries in the order of their events, as the feed lists them
    entries = sorted(
        (k for k in changed if isinstance(k, tuple)), key=lambda k: (changed[k], str(k))
    )
    if not any("turn" in wanted for _, wanted in viewers):
        turns = []
    held = (
        cards.held_calls(campaign=campaign)
        if "approvals" in changed and any("approvals" in wanted for _, wanted in viewers)
        else None
    )
    reads = {t: presenters.turn_read(campaign=campaign, turn_id=t) for t in turns}
    watching = [rights for rights, wanted in viewers if "turn" in wanted]
    feed_reads = {
        t: _once(partial(presenters.feed_read, campaign=campaign, viewers=watching, turn=read))
        for t, read in reads.items()
        if read is not None
    }
    order: list[Part] = ["board", "approvals", *entries, *turns]
    makes: dict[Part, dict[str, Callable[[], Any]]] = {part: {} for part in order}  # every
    # class's drawing some viewer needs, by part and key
    plans = []  # per viewer, by part: each message, and the key of its drawing and its class
    for rights, wanted in viewers:
        parts: list[tuple[Part, dict[str, Any], Drawing]] = []
        if "board" in changed and "board" in wanted:
            parts.append(("board", {"part": "board"}, _board_drawing(campaign, rights)))
        if held is not None and "approvals" in wanted:
            drawing = _approvals_drawing(campaign, rights, held)
            parts.append(("approvals", {"part": "approvals"}, drawing))
        for kind, key in entries:
            if kind in wanted:
                drawing = (
                    _roll_drawing(campaign, key)
                    if kind == "roll"
                    else _change_drawing(campaign, rights, key)
                )
                parts.append(((kind, key), {"part": kind, kind: key}, drawing))
        for turn_id in turns if "turn" in wanted else []:
            if (read := reads[turn_id]) is not None:
                drawing = _turn_drawing(campaign, rights, read, feed_reads[turn_id])
                parts.append((turn_id, {"part": "turn", "turn": turn_id}, drawing))
        plan: dict[Part, list[tuple[dict[str, Any], str, str]]] = defaultdict(list)
        for part, message, (fragment, viewer, draw) in parts:
            key = _key(campaign, fragment, viewer)
            makes[part].setdefault(key, _counted(fragment, draw))
            plan[part].append((message, key, viewer))
        plans.append((rights, plan))
    found = dict(_cache().get_many([key for keys in makes.values() for key in keys]))
    every: list[list[dict[str, Any]]] = [[] for _ in plans]
    for part in order:
        if not makes[part]:
            continue
        kept = _kept_all(makes[part], found)
        drawn = [_messages(plan[part], kept, rights) for rights, plan in plans]
        for messages, more in zip(every, drawn, strict=True):
            messages.extend(more)
        if sent is not None:
            sent(part, drawn)
    return campaign.drawn_seq, every


def _messages(
    plan: list[tuple[dict[str, Any], str, str]], kept: dict[str, Any], rights: Rights
) -> list[dict[str, Any]]:
    """A viewer's messages of one part, from its class's kept drawing."""
    messages = []
    for message, key, viewer in plan:
        part = message["part"]
        html = _board_for(kept[key], viewer, rights) if part == "board" else kept[key]
        # An empty turn is not one this viewer may see; an empty entry is not one to tell (the
        # page takes back the place it held for it).
        if html or part in ENTRIES:
            messages.append({"type": "fragment", **message, "html": html})
    return messages


def _once(read: Callable[[], Any]) -> Callable[[], Any]:
    """`read`, made the first time it is asked for (by the first class drawn that needs it; a
    push kept every class's drawing already asks nothing), then the same value: a push draws
    in one thread."""
    made: list[Any] = []

    def once() -> Any:
        if not made:
            made.append(read())
        return made[0]

    return once


def undrawn(changed: Any, wanted: frozenset[str]) -> list[dict[str, Any]]:
    """What a page is sent when the drawing failed: each fragment it wanted, `html` null (the
    page fetches it)."""
    messages: list[dict[str, Any]] = []
    if "board" in changed and "board" in wanted:
        messages.append({"type": "fragment", "part": "board", "html": None})
    for turn_id in sorted(t for t in changed if part_of(t) == "turn") if "turn" in wanted else []:
        messages.append({"type": "fragment", "part": "turn", "turn": turn_id, "html": None})
    for kind, key in sorted((k for k in changed if isinstance(k, tuple)), key=str):
        if kind in wanted:
            messages.append({"type": "fragment", "part": kind, kind: key, "html": None})
    if "approvals" in changed and "approvals" in wanted:
        messages.append({"type": "fragment", "part": "approvals", "html": None})
    return messages
