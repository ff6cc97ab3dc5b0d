"""How many tables one host carries: tables of four players and their GM, each person a campaign
page (a websocket, and the fragment fetches the page's JavaScript makes after each event),
playing at a human pace, open loop, with more tables at each step until a step misses the bar;
the answer, printed last, is the largest step with p95 <= 200 ms on every measure and no error.

    .venv/bin/python bench/capacity.py [--smoke] [--spread] [seconds] [gap] [workers] [servers]
                                       [steps ...]

(REDIS_URL, the channels-redis server, defaults to the embedded one's database 4; the database is a
fresh one, dropped at the end.)

**The servers** are the Procfile's own processes: its `web:` command `servers` times and its
`worker:` command `workers` times, read from the Procfile when the run starts (so a change of
web server there is followed), on PostgreSQL + Redis with production settings
(bench/_setup.py's `production_environment`: DJANGO_DEBUG=0, fresh keys, the scripted GM).
The scripted GM plays at a model's pace: GM_SCRIPTED_DELAY before each round and
GM_SCRIPTED_WORD_DELAY before each word it says, so a turn streams its 20-60 words (about
40 on average) over 1-4 s with one to three tool calls (words and events per turn are printed).

**A table** is a campaign under the default approval policy (`watchful`,
docs/architecture.md#approval-fatigue), its owner (the GM's seat at the table) and four players
with a character each, every one of the five signed in by a real Django session (made
server-side, as a sign-in would) and holding the page's CSRF cookie: the page's GETs and the API
calls go with the session cookie and `X-CSRFToken`, the websocket with the cookie and the
server's own Origin. Each table acts at random moments, one action every `gap` seconds on
average (15) (exponential gaps: open loop, a slow server does not slow the arrivals), by one of its
players at random: a turn for the GM, a dice roll, a move of the player's own token, now and
then (about every tenth turn) an undo of the table's latest GM turn by its player, through the
undo dialog (its plan, then the undo unless the plan is blocked). A GM call the policy holds
(an attack on another player's character) is approved by the owner's page 1-3 s after it
appeared (that wait is no one's latency). Every page emulates static/js/table/ (`Page` below:
which fragment each event fetches, board.js's coalescing, socket.js's ordering and resync).

**Each step** (`steps`: the number of tables, each step `seconds` long; the tables of a step
are those of the step before and new ones) prints, for what a player feels, p50/p95/p99 of:
action -> own event (the request sent, to the acting page's socket receiving the event it
caused: its message, its roll, its move, its undo), action -> others' event (the same event at
the table's four other pages), and fragment fetch (every GET a page makes after an event, and each
board the server sends down a socket: from the arrival of the first event it reflects), each
within p95 <= 200 ms; and a GM turn's start (its `gm_turn_started` at the actor's page, from
its POST, or from its table's previous turn's end when the turn was posted while the GM still
answered that one: a table's GM answers its turns in order on any host), within p95 <= 1 s:
past what the GM's workers run at once the turns queue, and a table whose GM answers after
other tables' turns queued before it is not carried, however fast its page (POST -> started,
that wait included, is printed beside it); and
the errors (5xx, unexpected statuses, events lost: an action's event that a page neither
received nor caught up with by a resync), the seq gaps (closed by reordering, or resynced as
socket.js does), the offered load (actions/s, events/s received by the pages, fetches/s), CPU
per table-minute (/proc: the server processes, web and workers; PostgreSQL, its backends on
this database, and Redis, its whole server, which other jobs may share; the bench's own client
processes), and PostgreSQL
backends on the database (sampled every second). The ramp goes one step past the first whose
pages miss the bar (to show the trend beyond it; a step that misses by the GM's start alone goes
on, to find what the web processes carry) and stops there. The run fails (exit 1), after
printing everything, if any step had an error: a carried table has none, and an error past
capacity is a fault worth reading too.
A benchmark, not a test: it asserts no figure, only that every step did what it should.
"""

import asyncio
import http.client
import json
import math
import multiprocessing
import os
import random
import re
import secrets
import shlex
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from _setup import ROOT, django_on_postgres, production_environment, sizes
from _world import table_of_five
from ws_fanout import (
    TIMEOUT,
    answer,
    free_port,
    listening,
    stop_servers,
)

CLIENT_PROCESSES = 4
MIX = {"gm_turn": 0.40, "roll": 0.28, "move": 0.28, "undo": 0.04}  # undo: ~1 turn in 10
APPROVE_AFTER = (1.0, 3.0)  # seconds the GM's page takes to approve a held call
ALONE = 10  # GETs of each fragment with nothing else happening, after the first step
BAR_MS = 200.0  # p95 of every measure, for a step to count as carried
GM_START_MS = 1000.0  # p95 of a GM turn's start at the actor's page, from its POST or from the
# end of its table's previous turn if that is later (the GM answers a table in order, whatever
# the host): the workers keep up, rather than the turns queueing behind other tables' turns
GM_ROUND_DELAY = 0.2  # GM_SCRIPTED_DELAY: seconds before each of the GM's rounds
GM_WORD_DELAY = 0.04  # GM_SCRIPTED_WORD_DELAY: seconds before each word the GM says
# Fragment measures with no request: the socket's message, from the first event it reflects.
SENT_BOARD = "board sent (event -> it)"
SENT_TURN = "turn sent (event -> it)"
SENT_APPROVALS = "approvals sent (event -> it)"
SENT = (SENT_BOARD, SENT_TURN, SENT_APPROVALS)
REORDER_WAIT = 0.5  # seconds a gap waits for its events (static/js/table/socket.js)
EVENT_WAIT = 15.0  # seconds an action's event has to reach every page before it counts lost
QUIET_TIMEOUT = 120  # seconds for the GM turns to end and the pages to catch up after a step
# What each action may answer without being an error (409: later calls depend on the turn, or
# the held call was already answered; 400: a move the map refuses).
EXPECTED = {
    "POST turns/": {201},
    "POST rolls/": {201},
    "POST move/": {201, 400},
    "POST undo/": {200, 409},
    "POST approve/": {200, 409},
}
GOBLIN = "Goblin Warchief Grishnak of the Black Hills"
HEROES = ["Aldric Stormborn of Varn", "Brenna Ironhand Vael", "Corwin Ashgrove Dunmere",
          "Delphine Moonwhisper Kaur"]  # fmt: skip
# What a player says to the GM: one to three tool calls, 20 to 60 words of narration
# (the names above are long on purpose: the scripted GM repeats them, as a model would).
SAYINGS = [
    (0.35, "I attack the goblin, then I attack the goblin again and move me to {x},{y}."),
    (0.30, "I attack the goblin and we take a long rest."),
    (0.20, "I attack the goblin!"),
    (0.15, "I attack {other}!"),  # a blow to a player's character: held for the GM's approval
]


# -- HTTP from the client processes: keep-alive connections, one per thread and server -------

_local = threading.local()


def http_request(
    port: int, method: str, path: str, cookie: str, csrf: str, body: Any = None, html: bool = False
) -> tuple[int, str, float]:
    """(status, body text, round trip in ms) of one request as the page's fetch makes it: the
    session and CSRF cookies, and for a body the JSON and the CSRF header
    (static/js/table/http.js)."""
    connections = _local.__dict__.setdefault("connections", {})
    headers = {"Accept": "text/html" if html else "application/json", "Cookie": cookie}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers.update({"Content-Type": "application/json", "X-CSRFToken": csrf})
    for attempt in range(2):
        conn = connections.get(port)
        fresh = conn is None
        if fresh:
            conn = connections[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        started = time.perf_counter()
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            del connections[port]
            if fresh or attempt:  # a kept-alive connection the server had closed: once more
                raise
            continue
        if (response.getheader("Connection") or "").lower() == "close":
            conn.close()
            del connections[port]
        elapsed = (time.perf_counter() - started) * 1000
        return response.status, raw.decode("utf-8", "replace"), elapsed
    raise AssertionError("unreachable")


# -- the page: which fetches each event makes ---------------------------------------------------

TURN_LI = re.compile(r'<li class="turn( undone)?" data-turn="(\d+)"[^>]*? data-status="(\w+)"')
# An entry outside any turn as feed.js finds it, a `<li>` of the feed naming it: a change's
# drawing does, a roll's does not (its `data-roll` is on the roll inside), only its held place.
ENTRY = re.compile(r'<li [^>]*?data-(roll|change)="([^"]+)"')
SEQ = re.compile(r'data-seq="(\d+)"')
WAITING = {"queued", "running", "awaiting_approval"}  # static/js/table/waiting.js
APPROVAL_FORM = re.compile(r'<form class="approval-answer" data-invocation="([^"]+)"')


@dataclass
class DrawnTurn:
    """What the page's feed shows of a turn (its `<li class="turn">`), as far as the fetches
    depend on it."""

    status: str
    undone: bool
    streaming: bool  # it holds the hidden GM message a stream writes into
    calls: bool  # its calls shown (`:scope > .calls`), not folded into an undone turn's details


class Page:
    """One open campaign page: for each event, the fetches static/js/table/*.js makes. Copied
    from (keep in step with) the JavaScript:

    - socket.js asks for the board, the turns, the entries outside any turn and the approval
      card (`?fragments=board,turn,roll,change,approvals`): the server sends each down the
      socket after the events that change it (web/pages/fragments.py), `html` null when it
      could not draw it (then fetched). Events go in seq order; one past a gap waits
      REORDER_WAIT for the missing ones, then the page resyncs: GET feed/ (the feed whole),
      then the board, then the feed's `data-seq` is the page's seq and `resynced` is emitted;
      a failed feed is tried again 1, 2, 4 ... 15 s later (here at most 10 times: a bench ends).
      A `hello` newer than the page resyncs too.
    - board.js: after `state_changed`, `invocation_reverted`, `interaction_reverted` or
      `member_added` the server sends the board (timed from the event's arrival to the board
      that reflects it); `html` null -> GET board/ (refreshBoard: one fetch in flight, at most
      one more after it however many asked meanwhile; a failed one again after 1, 2, 4, 8 s).
    - feed.js, the turns sent: after `message_created`, `gm_turn_completed`,
      `interaction_reverted`, `approval_requested`, `approval_resolved` and a `gm_turn_started`
      of an attempt past the first the server sends the turn (turnSent; timed as the board is;
      `html` null -> GET feed/?turn=). The page awaits it (`sending`) unless its drawing shows
      the event already (for `gm_turn_started`, only if the turn is drawn). A drawing replaces
      the turn's only if as new or newer (its `data-seq`, feed.js's `newest`).
    - feed.js, the turns fetched: `gm_text_delta` -> ?turn= unless the turn is drawn with its
      streaming slot, or a fetch of it is on its way, or the server is to send it, or its
      drawing (or its last fetch for streamed words) is as new as the newest event but
      streamed words (bus.js's lastDrawnSeq, `resynced`'s seq included); `dice_rolled` of a
      GM's roll, `state_changed` from a person (`source` user) and `invocation_reverted` ->
      ?turn= for a known turn; `interaction_reverted` that undid more than one call -> ?turn=
      of every later turn whose calls are shown. A turn is known when drawn or asked for. One
      ?turn= per turn is on its way at a time (refreshTurn): an event that asks meanwhile gets
      one more after it, unless the drawing that arrives reflects that event already (its
      `data-seq` >= the event's seq).
    - feed.js, the entries outside any turn: a player's `dice_rolled` holds the roll's place
      (a hidden slot) unless it is held; a person's `state_changed` outside any turn holds the
      change's place unless the feed has the change. The server sends the entry (made, and
      undone): it fills its place (a roll filled is no longer found: `ENTRY`), "" takes a
      hidden place back, one sent before its event waits for it (the last 50 kept); `html`
      null -> GET feed/?roll= or ?change= if its place is there. A creature made by set-up
      (`state_changed` with its whole row) -> its place held and GET feed/?added= once. A
      failed entry fetch takes a hidden place back.
    - dice.js: the roller's page holds its roll's place when the API has answered.
    - approval.js: after `approval_requested` and `approval_resolved` the server sends the card
      (approvalSent; timed as the board is; `html` null -> GET approvals/); `resynced` -> GET
      approvals/, and so does the GM's answer once the API has answered it. A card replaces
      the one shown only if as new or newer (its `data-seq`).
    - waiting.js: `approval_requested`, `approval_resolved` -> ?turn= of every drawn turn still
      waiting (queued, running, awaiting_approval; not undone) and every turn on its way, but
      the event's own (the server sends it).
    - undo.js: the dialog GETs undo-plan/?turn=; it POSTs the undo only if the plan is not
      blocked (`data-blocked`), and GETs the plan again after a 409.
    - attention.js, alerts.js, composer.js, map.js, setup.js: no fetch on an event.
    Not copied, as they never run here: what the pages do while their socket is down (the
    bench fails on a closed socket) and after a retry, a redo, a Stop or a rewind (it makes
    none).
    """

    def __init__(
        self,
        fetch: Callable[[str, str], Any],
        spawn: Callable[[Any], None],
        count: Callable[[str], None],
        card: Callable[[str], None] | None = None,
        sent: Callable[[float], None] | None = None,
    ) -> None:
        self.fetch = fetch  # async (kind, query) -> the fragment's text, or None if it failed
        self.sent = sent  # sent(kind, ms): a fragment arrived, ms after the first event it shows
        self.spawn = spawn  # start a coroutine, as a handler's promise runs on
        self.count = count  # count("gaps"), count("reordered"), count("resyncs")
        self.card = card  # shown the approval card as drawn (the GM's page answers it)
        self.seq = 0  # socket.js's lastSeq: the page's boot seq, then each event's
        self.held: list[dict[str, Any]] = []
        self.resyncing = False
        self.gap_timer: asyncio.TimerHandle | None = None
        self.last_resync = 0.0  # when its last resync began
        self.moved = asyncio.Event()  # set as `seq` moves on
        self.turns: dict[int, DrawnTurn] = {}
        self.entries: dict[str, bool] = {}  # "roll:<id>", "change:<key>" found: whether hidden
        self.early: dict[str, str] = {}  # feed.js's `arrived`: entries sent before their event
        self.asked: set[int] = set()  # refreshTurn's `asked`
        self.on_their_way: set[int] = set()  # refreshTurn's `fetching`
        self.again: dict[int, float] = {}  # refreshTurn's `again`: the newest event to reflect
        self.board_running: asyncio.Future | None = None
        self.board_again = False
        self.board_due: list[tuple[int, float]] = []  # events awaiting their board: (seq, at)
        self.sending: set[int] = set()  # feed.js's `sending`: turns the server is to send
        self.turn_due: dict[int, list[tuple[int, float]]] = defaultdict(list)  # as board_due
        self.approvals_due: list[tuple[int, float]] = []  # as board_due, for the card
        self.placed_at: dict[int, int] = {}  # feed.js's `placedAt`: a turn's drawing's data-seq
        self.drawn_seq = -math.inf  # bus.js's lastDrawnSeq: the newest event but streamed words
        self.words_asked: dict[int, float] = {}  # feed.js's `wordsAsked`
        self.card_seq = -1  # approval.js's `shownSeq`

    # feed.js
    def known(self, turn: int | None) -> bool:
        return turn is not None and (turn in self.turns or turn in self.asked)

    def draw(self, html: str) -> None:
        """Take a fragment's turns and entries as the DOM would hold them."""
        self.entries.update({f"{kind}:{key}": False for kind, key in ENTRY.findall(html)})
        starts = [(m.start(), m) for m in TURN_LI.finditer(html)] + [(len(html), None)]
        for (start, match), (end, _) in zip(starts, starts[1:], strict=False):
            part = html[start:end]
            if at := SEQ.search(part[: part.index(">")]):  # the `<li>`'s own `data-seq`
                self.placed_at[int(match[2])] = int(at[1])
            self.turns[int(match[2])] = DrawnTurn(
                status=match[3],
                undone=bool(match[1]),
                streaming="ai streaming" in part,
                calls='class="calls"' in part and not match[1],
            )

    def draw_feed(self, html: str) -> None:
        """reloadFeed: the feed whole replaces the page's, its turns' `data-seq` theirs."""
        self.turns.clear()
        self.entries.clear()
        self.placed_at.clear()
        self.draw(html)

    def refresh_turn(self, turn: int, seq: float = math.inf) -> None:
        # An async function runs up to its first await at once: the request is on its way
        # before the next event's handler looks.
        self.asked.add(turn)
        if turn in self.on_their_way:
            self.again[turn] = max(self.again.get(turn, -math.inf), seq)
            return
        self.on_their_way.add(turn)
        self.spawn(self._refresh_turn(turn))

    async def _refresh_turn(self, turn: int) -> None:
        try:
            while True:
                self.again.pop(turn, None)
                html = await self.fetch("feed ?turn=", f"feed/?turn={turn}")
                if html is not None and self.newest(turn, html):
                    self.draw(html)
                wanted = self.again.get(turn)
                if wanted is None or (html is not None and int(SEQ.search(html)[1]) >= wanted):
                    break
        finally:
            self.again.pop(turn, None)
            self.on_their_way.discard(turn)

    def draw_roll(self, roll: int, turn: int | None, seq: float = math.inf) -> None:
        if turn is not None:
            self.refresh_turn(turn, seq)
        else:
            self.draw_entry(f"roll:{roll}")

    def draw_change(self, key: str, query: str | None = None) -> None:
        """feed.js's drawChange; `query`: fetch it (the socket does not bring it)."""
        if f"change:{key}" not in self.entries:
            self.draw_entry(f"change:{key}", query)

    def draw_entry(self, name: str, query: str | None = None) -> None:
        """feed.js's drawEntry: the place held (a hidden slot) if none is, filled by the
        drawing sent already, or fetched (`query`)."""
        self.entries.setdefault(name, True)
        if (sent := self.early.pop(name, None)) is not None:
            self.fill(name, sent)
        elif query is not None:
            self.spawn(self._fetch_entry(name, query))

    def entry_sent(self, kind: str, key: Any, html: str | None) -> None:
        """feed.js's entrySent: a roll or a change the server sent."""
        name = f"{kind}:{key}"
        if html is None:
            if name in self.entries:
                self.spawn(self._fetch_entry(name, f"{kind}={key}"))
        elif name not in self.entries:
            self.early[name] = html
            if len(self.early) > 50:
                del self.early[next(iter(self.early))]
        else:
            self.fill(name, html)

    def fill(self, name: str, html: str) -> None:
        """A drawing replaces the entry's place; "" takes a hidden place back."""
        hidden = self.entries.pop(name)
        if html:
            self.draw(html)
        elif not hidden:
            self.entries[name] = False

    async def _fetch_entry(self, name: str, query: str) -> None:
        html = await self.fetch(f"feed ?{query.split('=')[0]}=", f"feed/?{query}")
        if name not in self.entries:
            return
        if html is not None:
            self.fill(name, html)
        elif self.entries[name]:
            del self.entries[name]

    # board.js
    def refresh_board(self) -> asyncio.Future:
        if self.board_running is not None:
            self.board_again = True
            return self.board_running
        self.board_again = False  # at once, as the async function's start runs (see above)
        self.board_running = asyncio.ensure_future(self._board())
        return self.board_running

    async def _board(self) -> None:
        attempt = 0
        while True:
            if await self.fetch("board", "board/") is None:
                attempt += 1
                self.board_again = attempt < 5
                await asyncio.sleep(0.5 * 2**attempt)
            else:
                attempt = 0
            if not self.board_again:
                break
            self.board_again = False
        self.board_running = None

    def board_sent(self, html: str | None) -> None:
        """board.js's boardSent: the board the server sent, or null (fetch it)."""
        if html is None:
            self.board_due.clear()  # the fetch is timed as one
            self.refresh_board()
            return
        self.board_due = self.arrived(SENT_BOARD, html, self.board_due)

    def arrived(
        self, kind: str, html: str, due: list[tuple[int, float]]
    ) -> list[tuple[int, float]]:
        """A sent fragment arrived: timed from the first of the events awaiting it that it shows
        (its `data-seq`); the events it does not show yet, still awaiting."""
        seq = int(SEQ.search(html)[1])
        covered = [at for s, at in due if s <= seq]
        if covered and self.sent is not None:
            self.sent(kind, (time.time() - min(covered)) * 1000)
        return [(s, at) for s, at in due if s > seq]

    # feed.js: the turns the server sends
    def newest(self, turn: int, html: str) -> bool:
        """feed.js's `newest`: a drawing may replace the turn's only if as new or newer."""
        seq = int(SEQ.search(html)[1])
        if seq < self.placed_at.get(turn, -1):
            return False
        self.placed_at[turn] = seq
        return True

    def words_ask_for(self, turn: int) -> bool:
        """feed.js's wordsAskFor: streamed words with no place in the turn's drawing fetch it
        once per event that may change it, and only while its drawing predates that event."""
        if turn in self.on_their_way or turn in self.sending:
            return False
        drawn = max(self.placed_at.get(turn, -math.inf), self.words_asked.get(turn, -math.inf))
        if drawn >= self.drawn_seq:
            return False
        self.words_asked[turn] = self.drawn_seq
        return True

    def to_be_sent(self, turn: int, seq: int) -> None:
        self.asked.add(turn)
        if self.placed_at.get(turn, -1) < seq:
            self.sending.add(turn)
            self.turn_due[turn].append((seq, time.time()))

    def turn_sent(self, turn: int, html: str | None) -> None:
        self.sending.discard(turn)
        due = self.turn_due.pop(turn, [])
        if html is None:
            self.refresh_turn(turn)
            return
        if still := self.arrived(SENT_TURN, html, due):
            self.turn_due[turn] = still
        if self.newest(turn, html):
            self.draw(html)

    # approval.js
    def redraw_approvals(self) -> None:
        self.spawn(self._approvals())

    async def _approvals(self) -> None:
        html = await self.fetch("approvals", "approvals/")
        if html is not None:
            self.show_card(html)

    def show_card(self, html: str) -> None:
        """approval.js's show: a card replaces the one shown only if as new or newer."""
        seq = int(SEQ.search(html)[1])
        if seq >= self.card_seq:
            self.card_seq = seq
            if self.card is not None:
                self.card(html)

    def approvals_sent(self, html: str | None) -> None:
        """approval.js's approvalSent: the card the server sent, or null (fetch it)."""
        if html is None:
            self.approvals_due.clear()  # the fetch is timed as one
            self.redraw_approvals()
            return
        self.approvals_due = self.arrived(SENT_APPROVALS, html, self.approvals_due)
        self.show_card(html)

    # socket.js: events in seq order, a gap waits, then a resync
    def receive(self, envelope: dict[str, Any]) -> None:
        if self.resyncing:
            self.held.append(envelope)
            return
        if envelope["seq"] <= self.seq:
            return
        if envelope["seq"] > self.seq + 1:
            self.held.append(envelope)
            if self.gap_timer is None:
                self.count("gaps")
                self.gap_timer = asyncio.get_running_loop().call_later(REORDER_WAIT, self.gap_open)
            return
        self.apply(envelope)
        self.drain()

    def apply(self, envelope: dict[str, Any]) -> None:
        self.seq = envelope["seq"]
        self.moved.set()
        self.emit(envelope)

    def drain(self) -> None:
        self.held.sort(key=lambda e: e["seq"])
        while self.held and self.held[0]["seq"] <= self.seq + 1:
            following = self.held.pop(0)
            if following["seq"] == self.seq + 1:
                self.apply(following)
        if not self.held and self.gap_timer is not None:
            self.gap_timer.cancel()
            self.gap_timer = None
            self.count("reordered")

    def gap_open(self) -> None:
        self.gap_timer = None
        if self.held:
            self.resync()

    def resync(self) -> None:
        if self.gap_timer is not None:
            self.gap_timer.cancel()
            self.gap_timer = None
        if self.resyncing:
            return
        self.resyncing = True
        self.last_resync = time.time()
        self.count("resyncs")
        self.spawn(self._resync())

    async def _resync(self) -> None:
        for attempt in range(10):
            if await self.reload():
                break
            await asyncio.sleep(min(2**attempt, 15))
        self.resyncing = False
        for envelope in sorted(self.held, key=lambda e: e["seq"]):
            if envelope["seq"] > self.seq:
                self.apply(envelope)
        self.held = []
        self.moved.set()

    # socket.js's reload, after a gap or a newer hello
    async def reload(self) -> bool:
        html = await self.fetch("feed (resync)", "feed/")
        if html is None:
            return False
        self.draw_feed(html)
        await self.refresh_board()
        self.seq = int(SEQ.search(html)[1])
        self.emit({"type": "resynced", "seq": self.seq})
        return True

    def emit(self, event: dict[str, Any]) -> None:
        """Every module's handlers of this event's type, in the page's import order."""
        kind, turn, data = event["type"], event.get("turn"), event.get("data") or {}
        seq = event.get("seq", math.inf)
        if kind != "gm_text_delta":  # bus.js's lastDrawnSeq
            self.drawn_seq = max(self.drawn_seq, seq)
        if kind in ("state_changed", "invocation_reverted", "interaction_reverted", "member_added"):
            self.board_due.append((event["seq"], time.time()))  # the server sends it
        if kind == "message_created":
            self.to_be_sent(turn, seq)
        elif kind == "gm_turn_started":
            if data.get("attempt", 1) > 1 and turn in self.turns:
                self.to_be_sent(turn, seq)
        elif kind == "gm_text_delta":
            drawn = self.turns.get(turn)
            if not (drawn and drawn.streaming) and self.words_ask_for(turn):
                self.refresh_turn(turn)
        elif kind == "gm_turn_completed":
            self.to_be_sent(turn, seq)
        elif kind == "dice_rolled":
            self.draw_roll(data["id"], turn, seq)
        elif kind == "state_changed":
            invocation = event.get("invocation")
            if event.get("source") != "user":
                pass
            elif self.known(turn):
                self.refresh_turn(turn, seq)
            elif turn is None and invocation:
                self.draw_change(invocation)
            elif turn is None and (  # a creature made by set-up: its row whole
                data.get("entity") == "creature" and not data.get("facet") and data.get("fields")
            ):
                self.draw_change(f"added-{data['id']}", f"added={data['id']}")
        elif kind in ("approval_requested", "approval_resolved"):
            self.to_be_sent(turn, seq)
        elif kind == "invocation_reverted":
            if self.known(turn):
                self.refresh_turn(turn, seq)
        elif kind == "interaction_reverted":
            if turn in self.turns:
                self.turns[turn].undone = True
            self.to_be_sent(turn, seq)
            if len(data.get("invocations") or []) > 1:
                for later, drawn in list(self.turns.items()):
                    if later > turn and drawn.calls:
                        self.refresh_turn(later, seq)
        if kind in ("approval_requested", "approval_resolved"):
            self.approvals_due.append((event["seq"], time.time()))  # the server sends it
        elif kind == "resynced":
            self.redraw_approvals()
        if kind in ("approval_requested", "approval_resolved"):
            waiting = self.on_their_way | self.sending
            waiting |= {t for t, d in self.turns.items() if d.status in WAITING and not d.undone}
            for t in waiting - {turn}:
                self.refresh_turn(t, seq)


# -- the people: a page each, in separate client processes, no Django ---------------------------


@dataclass
class Stats:
    """One client process's samples over a step."""

    own: list[float] = field(default_factory=list)  # ms: action -> own event
    others: list[float] = field(default_factory=list)  # ms: action -> others' event
    fetches: list[tuple[str, int, float]] = field(default_factory=list)  # (kind, status, ms)
    actions: list[tuple[str, int, float]] = field(default_factory=list)  # (label, status, ms)
    gm_turns: list[float] = field(default_factory=list)  # ms: turn POST -> own completed
    gm_started: list[float] = field(default_factory=list)  # ms: turn POST -> own started
    # ms: the later of its POST and its table's previous turn's end -> its start
    gm_free_started: list[float] = field(default_factory=list)
    words: list[int] = field(default_factory=list)  # words the GM said, per completed turn
    deltas: list[int] = field(default_factory=list)  # gm_text_delta events, per turn
    calls: list[int] = field(default_factory=list)  # tool calls, per completed GM turn
    replies: list[str] = field(default_factory=list)  # a few of the GM's replies, as streamed
    problems: list[str] = field(default_factory=list)
    lost: int = 0
    caught_up: int = 0  # an action's event a page took in through a resync instead
    events: int = 0
    gaps: int = 0
    reordered: int = 0
    resyncs: int = 0
    started: int = 0  # actions started


def people_main(conn: Connection, tables: list[dict[str, Any]]) -> None:
    """One client process: every page of its tables; on ("go", start, deadline) their actions
    until the deadline; then, on ("quiet", last seq per campaign), each page's wait for its
    campaign's last event, and ("stats", Stats)."""
    try:
        asyncio.run(_people(conn, tables))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        raise


async def _people(conn: Connection, tables: list[dict[str, Any]]) -> None:
    from autobahn.asyncio.websocket import WebSocketClientFactory, WebSocketClientProtocol

    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=32)
    stats = Stats()
    measuring = False
    tasks: set[asyncio.Task] = set()

    def spawn(coroutine: Any) -> None:
        task = loop.create_task(coroutine)
        tasks.add(task)
        task.add_done_callback(finished)

    def finished(task: asyncio.Task) -> None:
        tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            stats.problems.append(f"the bench's own page code: {type(error).__name__} {error}")

    async def request(person: dict[str, Any], method: str, path: str, body: Any = None):
        return await loop.run_in_executor(
            pool,
            http_request,
            *(person["port"], method, path, person["cookie"], person["csrf"], body, body is None),
        )

    class Person:
        """A seat at the table: its page, its socket, what its socket received when."""

        def __init__(self, table: dict[str, Any], seat: dict[str, Any]) -> None:
            self.table, self.seat = table, seat
            self.page = Page(
                self.fetch, spawn, self.count, self.card if seat["gm"] else None, self.sent
            )
            self.answering: set[str] = set()  # held calls this (GM's) page is answering
            self.calls: dict[int, int] = {}  # GM turn -> its calls, from gm_turn_completed
            self.seen: dict[tuple[str, Any], float] = {}  # an action's event -> received at
            self.gm_words: dict[int, list[str]] = defaultdict(list)

        def count(self, name: str) -> None:
            setattr(stats, name, getattr(stats, name) + 1)

        def card(self, html: str) -> None:
            """The GM reads the approval card and approves each held call a moment later."""
            for invocation in APPROVAL_FORM.findall(html):
                if invocation not in self.answering:
                    self.answering.add(invocation)
                    spawn(approve(self, invocation))

        def sent(self, kind: str, ms: float) -> None:
            if measuring:
                stats.fetches.append((kind, 200, ms))

        async def fetch(self, kind: str, query: str) -> str | None:
            path = f"/campaigns/{self.table['id']}/{query}"
            try:
                status, text, ms = await request(self.seat, "GET", path)
            except Exception as error:  # noqa: BLE001 (a refused or broken connection)
                stats.problems.append(f"GET {path}: {type(error).__name__} {error}")
                return None
            if measuring:
                stats.fetches.append((kind, status, ms))
            if status != 200:
                stats.problems.append(f"GET {path}: {status}")
                return None
            return text

        def receive(self, envelope: dict[str, Any]) -> None:
            """What the bench reads off the socket (when an action's event came), then the page's
            own handling."""
            now = time.time()
            kind, data = envelope["type"], envelope.get("data") or {}
            key = {
                "message_created": envelope.get("turn"),
                "dice_rolled": data.get("id"),
                "state_changed": envelope.get("invocation"),
                "interaction_reverted": envelope.get("turn"),
                "gm_turn_completed": envelope.get("turn"),
                "gm_turn_started": envelope.get("turn"),
            }.get(kind)
            if key is not None:
                self.seen.setdefault((kind, key), now)
            if kind == "gm_text_delta":
                self.gm_words[envelope["turn"]].append(data.get("text", ""))
            elif kind == "gm_turn_completed":
                self.calls[envelope["turn"]] = len(data.get("invocations") or [])
            if measuring:
                stats.events += 1
            self.page.receive(envelope)

    class Socket(WebSocketClientProtocol):
        person: Person

        def onMessage(self, payload: bytes, isBinary: bool) -> None:
            envelope = json.loads(payload)
            if envelope["type"] == "fragment":
                if envelope.get("part") == "board":
                    self.person.page.board_sent(envelope["html"])
                elif envelope.get("part") == "turn":
                    self.person.page.turn_sent(envelope["turn"], envelope["html"])
                elif envelope.get("part") == "approvals":
                    self.person.page.approvals_sent(envelope["html"])
                elif envelope.get("part") in ("roll", "change"):
                    part = envelope["part"]
                    self.person.page.entry_sent(part, envelope[part], envelope["html"])
                return
            if envelope["type"] == "hello":
                if not self.factory.hello.done():
                    self.factory.hello.set_result(envelope["seq"])
                elif envelope["seq"] > self.person.page.seq:
                    self.person.page.resync()
                return
            if isinstance(envelope.get("seq"), int):
                self.person.receive(envelope)

        def onClose(self, wasClean: bool, code: int | None, reason: str | None) -> None:
            if not self.factory.closing:
                stats.problems.append(f"socket closed by the server: {code} {reason}")
            if not self.factory.hello.done():
                self.factory.hello.set_exception(RuntimeError(f"refused: {code} {reason}"))

    async def open_page(person: Person, gate: asyncio.Semaphore) -> Any:
        """Load the page as a browser would (not timed), then open its socket."""
        seat, table = person.seat, person.table
        async with gate:
            status, html, _ = await request(seat, "GET", f"/campaigns/{table['id']}/")
            if status != 200:
                raise RuntimeError(f"the campaign page answered {status}")
            person.page.seq = int(SEQ.search(html)[1]) if SEQ.search(html) else 0
            person.page.draw(html)
            factory = WebSocketClientFactory(
                f"ws://127.0.0.1:{seat['port']}/ws/campaigns/{table['id']}/?fragments=board,turn,roll,change,approvals",
                origin=f"http://127.0.0.1:{seat['port']}",
                headers={"Cookie": seat["cookie"]},
            )
            factory.protocol = Socket
            factory.closing = False
            factory.hello = loop.create_future()
            factory.setProtocolOptions(openHandshakeTimeout=TIMEOUT, closeHandshakeTimeout=5)
            _, socket = await loop.create_connection(factory, "127.0.0.1", seat["port"])
            socket.person = person
            seq = await asyncio.wait_for(factory.hello, TIMEOUT)
            if seq > person.page.seq:
                person.page.resync()
            person.page.redraw_approvals()  # approval.js draws the card on load
        return socket

    people = {table["id"]: [Person(table, seat) for seat in table["seats"]] for table in tables}
    gate = asyncio.Semaphore(4)
    sockets = await asyncio.gather(
        *(open_page(p, gate) for seats in people.values() for p in seats)
    )
    conn.send(("ready", len(sockets)))
    commands: asyncio.Queue = asyncio.Queue()
    loop.add_reader(conn.fileno(), lambda: commands.put_nowait(conn.recv()))

    def posted(label: str, status: int, ms: float, path: str, text: str) -> Any:
        if measuring:
            stats.actions.append((label, status, ms))
        if status not in EXPECTED[label]:
            stats.problems.append(f"{label} {path}: {status} {text[:200]}")
        try:
            return json.loads(text)
        except ValueError:
            return {}

    async def api(person: Person, label: str, path: str, body: Any) -> tuple[int, Any]:
        url = f"/api/campaigns/{person.table['id']}/{path}"
        try:
            status, text, ms = await request(person.seat, "POST", url, body)
        except Exception as error:  # noqa: BLE001 (a refused or broken connection)
            stats.problems.append(f"{label} {url}: {type(error).__name__} {error}")
            return 0, {}
        return status, posted(label, status, ms, url, text)

    async def approve(gm: Person, invocation: str) -> None:
        await asyncio.sleep(random.uniform(*APPROVE_AFTER))
        status, _ = await api(gm, "POST approve/", f"invocations/{invocation}/approve/", {})
        if status:  # approval.js draws the card again once the API answered
            gm.page.redraw_approvals()

    async def felt(table: str, actor: Person, key: tuple[str, Any], sent: float) -> None:
        """The event `key` at the actor's page and at the table's others."""
        seats = people[table]
        deadline = time.time() + EVENT_WAIT
        while time.time() < deadline and not all(key in p.seen for p in seats):
            await asyncio.sleep(0.05)
        for person in seats:
            if key in person.seen:
                (stats.own if person is actor else stats.others).append(
                    (person.seen[key] - sent) * 1000
                )
            elif person.page.last_resync > sent or person.page.resyncing:
                stats.caught_up += 1
            else:
                stats.lost += 1
                stats.problems.append(f"{key} never reached {person.seat['name']} of {table}")

    async def gm_turn_done(table: str, actor: Person, turn: int, sent: float) -> None:
        key = ("gm_turn_completed", turn)
        deadline = time.time() + QUIET_TIMEOUT
        while key not in actor.seen and time.time() < deadline:
            await asyncio.sleep(0.2)
        if (started := ("gm_turn_started", turn)) in actor.seen:
            stats.gm_started.append((actor.seen[started] - sent) * 1000)
            before = [t for t in posted_turns[table] if t < turn]
            previous_end = actor.seen.get(("gm_turn_completed", max(before))) if before else None
            free = max(sent, previous_end or sent)  # its table's GM free to answer it
            stats.gm_free_started.append((actor.seen[started] - free) * 1000)
        if key in actor.seen:
            stats.gm_turns.append((actor.seen[key] - sent) * 1000)
            deltas = actor.gm_words.pop(turn, [])
            stats.words.append(len("".join(deltas).split()))
            if len(stats.replies) < 3:
                stats.replies.append("".join(deltas).strip())
            stats.deltas.append(len(deltas))
            stats.calls.append(actor.calls.pop(turn, 0))

    latest_gm: dict[str, tuple[int, Person]] = {}  # table -> (its latest GM turn, its player)
    posted_turns: dict[str, list[int]] = defaultdict(list)  # table -> its GM turns posted

    async def act(table: dict[str, Any], rng: random.Random) -> None:
        stats.started += 1
        seats = people[table["id"]]
        players = [p for p in seats if not p.seat["gm"]]
        action = rng.choices(list(MIX), weights=list(MIX.values()))[0]
        if action == "undo" and table["id"] not in latest_gm:
            action = "gm_turn"
        sent = time.time()
        if action == "gm_turn":
            player = rng.choice(players)
            others = [h for h in table["heroes"] if h["player"] != player.seat["name"]]
            saying = rng.choices([s for _, s in SAYINGS], weights=[w for w, _ in SAYINGS])[0]
            message = saying.format(
                x=rng.randrange(1, 9), y=rng.randrange(1, 9), other=rng.choice(others)["name"]
            )
            status, body = await api(player, "POST turns/", "turns/", {"message": message})
            if status == 201:
                latest_gm[table["id"]] = (body["id"], player)
                posted_turns[table["id"]].append(body["id"])
                spawn(gm_turn_done(table["id"], player, body["id"], sent))
                await felt(table["id"], player, ("message_created", body["id"]), sent)
        elif action == "roll":
            player = rng.choice(players)
            formula = rng.choice(["1d20", "1d20+5", "2d6+3", "1d8+2", "4d6"])
            body = {"formula": formula, "mode": rng.choice(["normal", "advantage"])}
            status, body = await api(player, "POST rolls/", "rolls/", body)
            if status == 201:
                player.page.draw_roll(body["id"], None)  # dice.js holds its place when answered
                await felt(table["id"], player, ("dice_rolled", body["id"]), sent)
        elif action == "move":
            player = rng.choice(players)
            hero = next(h for h in table["heroes"] if h["player"] == player.seat["name"])
            where = {"x": rng.randrange(0, 10), "y": rng.randrange(0, 10)}
            status, body = await api(player, "POST move/", f"creatures/{hero['id']}/move/", where)
            if status == 201:
                await felt(table["id"], player, ("state_changed", body["invocation"]), sent)
        else:  # undo.js: the dialog's plan, then the undo unless it is blocked; a refusal
            turn, player = latest_gm.pop(table["id"])  # draws the plan again
            plan = await player.fetch("undo-plan", f"undo-plan/?turn={turn}")
            if plan is None or 'data-blocked="1"' in plan:
                return
            sent = time.time()
            status, _ = await api(
                player, "POST undo/", f"turns/{turn}/undo/", {"reason": "", "cascade": False}
            )
            if status == 200:
                await felt(table["id"], player, ("interaction_reverted", turn), sent)
            elif status == 409:
                await player.fetch("undo-plan", f"undo-plan/?turn={turn}")

    async def arrivals(table: dict[str, Any], start: float, deadline: float) -> None:
        # Seeded by the table's number: every run (and step) offers a table the same actions at
        # the same moments, so runs on two commits compare like with like.
        rng = random.Random(table["number"])
        moment = start + rng.expovariate(1 / gap)
        while moment < deadline:
            await asyncio.sleep(max(0.0, moment - time.time()))
            spawn(act(table, rng))  # open loop: the next arrival does not wait for this one
            moment += rng.expovariate(1 / gap)

    _, start, deadline, gap = await commands.get()
    await asyncio.sleep(max(0.0, start - time.time()))
    measuring = True
    await asyncio.gather(*(arrivals(t, start, deadline) for t in tables))
    await asyncio.sleep(max(0.0, deadline - time.time()))
    conn.send(("arrived", stats.started))

    _, last = await commands.get()  # the GM turns have ended: each page's campaign's last seq

    async def caught_up(person: Person) -> None:
        while person.page.seq < last[person.table["id"]] or person.page.resyncing:
            person.page.moved.clear()
            await person.page.moved.wait()
        while person.page.board_due or person.page.approvals_due or person.page.sending:
            await asyncio.sleep(0.05)

    everyone = [p for seats in people.values() for p in seats]
    try:
        await asyncio.wait_for(asyncio.gather(*(caught_up(p) for p in everyone)), TIMEOUT)
    except TimeoutError:
        behind = [
            (
                p.seat["name"],
                p.page.seq,
                last[p.table["id"]],
                p.page.board_due[:1],
                p.page.approvals_due[:1],
                sorted(p.page.sending)[:3],
            )
            for p in everyone
            if p.page.seq < last[p.table["id"]]
            or p.page.board_due
            or p.page.approvals_due
            or p.page.sending
        ]
        stats.problems.append(
            "pages behind their campaign's last event or a fragment (seq, last, board, card and "
            f"turns unsent): {behind[:5]}"
        )
    while tasks:  # the fetches and measurements still on their way
        await asyncio.wait(list(tasks), timeout=EVENT_WAIT + 5)
        if tasks and all(t.done() for t in tasks):
            break
    measuring = False
    conn.send(("stats", asdict(stats)))
    for socket in sockets:
        socket.factory.closing = True
        socket.sendClose()
    await asyncio.wait([s.is_closed for s in sockets], timeout=5)
    pool.shutdown()


def unanswered(turns: Any) -> str:
    """What a run that ends on turns nobody answered needs to say: each turn's state, its lease,
    its held calls and the jobs that were to run or watch it."""
    from django_tasks_db.models import DBTaskResult

    from audit.models import ToolInvocation

    lines = []
    for turn in turns.order_by("pk"):
        held = ToolInvocation.objects.filter(turn=turn, status="awaiting_approval").count()
        lines.append(
            f"turn {turn.pk} of campaign {turn.campaign_id}: {turn.status}, attempts "
            f"{turn.attempts}, lease {turn.lease_owner or '-'} until {turn.lease_expires_at}, "
            f"created {turn.created_at:%H:%M:%S.%f}, {held} calls held for approval"
        )
        jobs = DBTaskResult.objects.filter(args_kwargs__args__0=turn.pk).order_by("enqueued_at")
        for job in jobs:
            lines.append(
                f"  job {job.task_path.rsplit('.', 1)[-1]} {job.status} enqueued "
                f"{job.enqueued_at:%H:%M:%S.%f} run_after {job.run_after} "
                f"started {job.started_at} finished {job.finished_at}"
            )
    return "\n".join(lines)


# -- the servers: the Procfile's processes ------------------------------------------------------


def procfile(name: str, env: dict[str, str]) -> list[str]:
    """The Procfile's command for process type `name`, its `${VAR:-default}`s expanded from
    `env`, as a list of arguments."""
    with open(os.path.join(ROOT, "Procfile")) as lines:
        for line in lines:
            kind, _, command = line.partition(":")
            if kind.strip() == name:
                expanded = re.sub(
                    r"\$\{(\w+)(?::-([^}]*))?\}",
                    lambda m: env.get(m[1]) or m[2] or "",
                    command.strip(),
                )
                return shlex.split(expanded)
    raise SystemExit(f"the Procfile has no {name}: process")


def start_procfile(servers: int, workers: int, log_dir: str) -> tuple[list, list[int]]:
    """The Procfile's `web:` `servers` times (each on a free PORT) and its `worker:` `workers`
    times, with the virtualenv's programs first on PATH; (processes, the web ones' ports)."""
    bin_dir = os.path.dirname(sys.executable)
    base = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "WEB_BIND": "127.0.0.1",
        "GM_SCRIPTED_DELAY": str(GM_ROUND_DELAY),
        "GM_SCRIPTED_WORD_DELAY": str(GM_WORD_DELAY),
    }
    processes, ports = [], []
    for kind, count in (("web", servers), ("worker", workers)):
        for i in range(count):
            env = dict(base)
            if kind == "web":
                env["PORT"] = str(port := free_port())
                ports.append(port)
            command = procfile(kind, env)
            with open(os.path.join(log_dir, f"{kind}-{i}.log"), "w") as log:
                processes.append(
                    subprocess.Popen(
                        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
                    )
                )
    deadline = time.monotonic() + TIMEOUT
    for process, port in zip(processes, ports, strict=False):
        if not listening(process, port, deadline):
            stop_servers([(p, 0) for p in processes])
            raise SystemExit(f"the web process on port {port} did not start: see its log")
    return processes, ports


# -- the tables ---------------------------------------------------------------------------------


def build_tables(
    first: int, count: int, ports: list[int], spread: bool = False
) -> list[dict[str, Any]]:
    """`count` tables under the default policy: the owner and four players, each with a signed-in
    session (the page's cookie) and a character, and a goblin to fight. A table's pages all talk
    to one web process, as a load balancer that routes by campaign sends them
    (docs/operations.md#scaling), the tables dealt round the processes; with `spread`, its pages
    are dealt round the processes one by one, as a balancer that routes each connection anywhere
    does."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User

    store = import_module(settings.SESSION_ENGINE).SessionStore

    csrf = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))

    def cookie(user: Any) -> str:
        session = store()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        return (
            f"{settings.SESSION_COOKIE_NAME}={session.session_key}; "
            f"{settings.CSRF_COOKIE_NAME}={csrf}"
        )

    built = []
    for t in range(first, first + count):
        owner = User.objects.create_user(f"gm-{t}")
        players = [User.objects.create_user(f"p{i}-t{t}") for i in range(4)]
        # the default policy
        campaign, heroes = table_of_five(f"table {t}", owner, players, HEROES, GOBLIN)
        seats = [
            {
                "name": u.username,
                "gm": u is owner,
                "cookie": cookie(u),
                "csrf": csrf,
                "port": ports[(t + i if spread else t) % len(ports)],
            }
            for i, u in enumerate([owner, *players])
        ]
        built.append({"id": str(campaign.pk), "number": t, "seats": seats, "heroes": heroes})
    return built


# -- sampling: PostgreSQL backends, CPU by process -----------------------------------------------


def ticks(pids: list[int] | None = None, name: str = "") -> dict[int, int]:
    """CPU ticks (user + system) used so far by each of the processes `pids`, or by each process
    whose program is `name`."""
    used = {}
    for pid in pids if pids is not None else [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                head, _, rest = stat.read().rpartition(")")
        except OSError:  # gone meanwhile
            continue
        if pids is None and head.partition("(")[2] != name:
            continue
        fields = rest.split()
        used[pid] = int(fields[11]) + int(fields[12])
    return used


def cpu_use() -> dict[str, dict[int, int]]:
    """Ticks so far, by whose: this database's PostgreSQL backends (the web processes' and the
    workers'), the Redis server (whole: other jobs' databases too)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        )
        backends = [pid for (pid,) in cursor.fetchall()]
    return {"postgres": ticks(backends), "redis": ticks(name="redis-server")}


def spent(before: dict[int, int], after: dict[int, int]) -> float:
    """Seconds of CPU between two `ticks()`: of the processes alive at the end (one started
    meanwhile counts whole; one ended meanwhile is missed)."""
    used = sum(t - before.get(pid, 0) for pid, t in after.items())
    return used / os.sysconf("SC_CLK_TCK")


def host_jiffies() -> tuple[int, int]:
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


class Backends(threading.Thread):
    """The database's PostgreSQL sessions, every second (this sampler's own included)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, int]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
            while not self.stopping.wait(1.0):
                [(n,)] = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                ).fetchall()
                self.samples.append((time.time(), n))

    def between(self, start: float, end: float) -> list[int]:
        return [n for t, n in self.samples if start <= t <= end] or [0]


# -- a step -------------------------------------------------------------------------------------


@dataclass
class Step:
    tables: int
    seconds: float
    gap: float
    stats: Stats = field(default_factory=Stats)
    started: int = 0
    cpu: dict[str, float] = field(default_factory=dict)  # seconds of CPU, by whose
    host_busy: float = 0.0
    backends: list[int] = field(default_factory=list)

    def p(self, values: list[float], pct: int) -> float:
        if not values:
            return float("nan")
        if len(values) == 1:
            return values[0]
        return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]

    @property
    def measures(self) -> dict[str, list[float]]:
        return {
            "action -> own event": self.stats.own,
            "action -> others' event": self.stats.others,
            "fragment fetch": [ms for _, _, ms in self.stats.fetches],  # and the boards sent
        }

    @property
    def gm_start_ok(self) -> bool:
        """The GM's workers pick the turns up: a table whose GM starts answering only after
        other tables' turns queued before it is not carried, however fast its page."""
        posted = sum(
            1 for label, st, _ in self.stats.actions if (label, st) == ("POST turns/", 201)
        )
        if not posted:  # no turn asked for in the step: none queued
            return True
        started = self.stats.gm_free_started
        return bool(started) and self.p(started, 95) <= GM_START_MS

    @property
    def errors(self) -> int:
        """Every problem a page met: a 5xx or other unexpected status, a lost event, a broken
        connection, a socket closed by the server, a page behind at the end."""
        return len(self.stats.problems)

    @property
    def pages_carried(self) -> bool:
        """The pages' measures within the bar and no error: what the web processes carry,
        whatever the GM's workers."""
        return not self.errors and all(
            values and self.p(values, 95) <= BAR_MS for values in self.measures.values()
        )

    @property
    def carried(self) -> bool:
        return self.pages_carried and self.gm_start_ok


def progress(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def run_step(
    step: Step,
    tables: list[dict[str, Any]],
    servers: tuple[list[int], list[int]],
    sampler: Backends,
):
    from campaigns.models import Campaign, Turn

    spawn = multiprocessing.get_context("spawn")
    clients = []
    for share in range(min(CLIENT_PROCESSES, len(tables))):
        ours, theirs = spawn.Pipe()
        process = spawn.Process(
            target=people_main, args=(theirs, tables[share::CLIENT_PROCESSES]), daemon=True
        )
        process.start()
        clients.append((ours, process))
    pids = [p.pid for _, p in clients]
    try:
        progress(f"{step.tables} tables: {5 * len(tables)} pages loading")
        assert sum(answer(c, p, "ready", QUIET_TIMEOUT) for c, p in clients) == 5 * len(tables)
        progress(f"{step.tables} tables: playing {step.seconds:g} s")
        start = time.time() + 0.5
        end = start + step.seconds
        for conn, _ in clients:
            conn.send(("go", start, end, step.gap))
        time.sleep(max(0.0, start - time.time()))
        web, workers = servers
        before = {"web": ticks(web), "workers": ticks(workers), "clients": ticks(pids), **cpu_use()}
        host = host_jiffies()
        step.started = sum(answer(c, p, "arrived", step.seconds + TIMEOUT) for c, p in clients)
        after = {"web": ticks(web), "workers": ticks(workers), "clients": ticks(pids), **cpu_use()}
        step.cpu = {who: spent(before[who], after[who]) for who in after}
        step.cpu["server"] = step.cpu["web"] + step.cpu["workers"]
        step.cpu["pg_redis"] = step.cpu["postgres"] + step.cpu["redis"]
        busy, every = (a - b for a, b in zip(host_jiffies(), host, strict=True))
        step.host_busy = busy / max(1, every)
        step.backends = sampler.between(start, end)
        progress(f"{step.tables} tables: waiting for the GM turns and the pages")
        ids = [t["id"] for t in tables]
        waiting = Turn.objects.filter(
            campaign_id__in=ids,
            status__in=[Turn.Status.QUEUED, Turn.Status.RUNNING, Turn.Status.AWAITING_APPROVAL],
        )
        deadline = time.monotonic() + QUIET_TIMEOUT
        while waiting.exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"GM turns still unanswered:\n{unanswered(waiting)}")
            time.sleep(0.5)
        seqs = Campaign.objects.filter(pk__in=ids).values_list("pk", "event_seq")
        last = {str(k): v for k, v in seqs}
        for conn, _ in clients:
            conn.send(("quiet", last))
        for conn, process in clients:
            got = Stats(**answer(conn, process, "stats", QUIET_TIMEOUT))
            for name in Stats.__dataclass_fields__:
                value = getattr(got, name)
                if isinstance(value, list):
                    getattr(step.stats, name).extend(value)
                else:
                    setattr(step.stats, name, getattr(step.stats, name) + value)
    finally:
        for _, process in clients:
            process.join(timeout=TIMEOUT)
            if process.is_alive():
                process.terminate()


# -- the report ---------------------------------------------------------------------------------


def gets(stats: Stats) -> int:
    """The fragment GETs the pages made (the boards sent down the sockets are not requests)."""
    return sum(kind not in SENT for kind, _, _ in stats.fetches)


def report(step: Step) -> None:
    s, seconds = step.stats, step.seconds
    minutes = step.tables * seconds / 60
    print(
        f"\n== {step.tables} tables ({5 * step.tables} pages), {seconds:g} s: offered "
        f"{step.started / seconds:.2f} actions/s, {s.events / seconds:.1f} events/s received, "
        f"{gets(s) / seconds:.1f} fetches/s"
    )
    print(f"{'':<28} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")

    def line(label: str, values: list[float], note: str = "") -> None:
        if values:
            print(
                f"{label:<28} {len(values):>6} {statistics.median(values):>8.1f}"
                f" {step.p(values, 95):>8.1f} {step.p(values, 99):>8.1f}{note}"
            )
        else:
            print(f"{label:<28} {0:>6}{note}")

    for label, values in step.measures.items():
        line(label, values)
    by_kind: dict[str, list[float]] = defaultdict(list)
    for kind, _, ms in s.fetches:
        by_kind[kind].append(ms)
    for kind in sorted(by_kind):
        line(f"  {kind}" if kind in SENT else f"  GET {kind}", by_kind[kind])
    by_action: dict[str, list[float]] = defaultdict(list)
    for label, _, ms in s.actions:
        by_action[label].append(ms)
    for label in sorted(by_action):
        line(f"  {label} (its HTTP)", by_action[label])
    line("GM turn: POST -> started", s.gm_started, "  (with the wait for its table's turn before)")
    line(
        "GM turn: free -> started",
        s.gm_free_started,
        f"  (in the bar at p95 <= {GM_START_MS:g} ms: from the later of its POST and its table's"
        " previous turn's end)",
    )
    line("GM turn: POST -> completed", s.gm_turns, "  (not in the bar: the GM's stream)")
    statuses = Counter((label, status) for label, status, _ in s.actions)
    fives = sum(1 for *_, st, _ in s.fetches + s.actions if st >= 500)
    words = statistics.mean(s.words) if s.words else 0
    deltas = statistics.mean(s.deltas) if s.deltas else 0
    calls = statistics.mean(s.calls) if s.calls else 0
    print(
        f"GM turns {len(s.gm_turns)}: on average {words:.0f} words in {deltas:.1f} "
        f"gm_text_delta events, {calls:.1f} tool calls; statuses "
        + ", ".join(f"{label.split()[1]} {st}x{n}" for (label, st), n in sorted(statuses.items()))
    )
    for reply in s.replies[:2]:
        print(f"  a reply: {reply[:300]}")
    print(
        f"errors {len(s.problems)}: 5xx {fives}, events lost {s.lost}, other "
        f"{len(s.problems) - fives - s.lost}; "
        f"seq gaps {s.gaps} ({s.reordered} closed by reordering), resyncs {s.resyncs} "
        f"(an action's event caught up by a resync: {s.caught_up})"
    )
    for problem in s.problems[:5]:
        print(f"  {problem}")
    cpu = ", ".join(
        f"{who} {step.cpu[key] / minutes:.2f} s"
        for who, key in (
            ("server", "server"),
            ("of which web", "web"),
            ("workers", "workers"),
            ("PostgreSQL (this database's backends)", "postgres"),
            ("Redis (the server, shared)", "redis"),
            (f"bench clients ({CLIENT_PROCESSES} processes)", "clients"),
        )
    )
    print(f"CPU per table-minute: {cpu}; host busy {step.host_busy:.0%} of {os.cpu_count()} cores")
    print(
        f"PostgreSQL backends on the database: max {max(step.backends)}, median "
        f"{statistics.median(step.backends):g}"
    )
    misses = [
        f"{label} p95 {step.p(values, 95):.1f} ms"
        for label, values in step.measures.items()
        if not values or step.p(values, 95) > BAR_MS
    ]
    if not step.gm_start_ok:
        missed = step.p(step.stats.gm_free_started, 95)
        misses.append(f"GM turn: free -> started p95 {missed:.1f} ms")
    misses += [f"{step.errors} errors"] if step.errors else []
    print(
        f"bar (p95 <= {BAR_MS:g} ms on every measure, the GM's start <= {GM_START_MS:g} ms, "
        "no error): " + ("met" if step.carried else "missed: " + "; ".join(misses))
    )


def alone(table: dict[str, Any]) -> None:
    """Each fragment fetched by one page with nothing else happening (the step's GM turns have
    ended), ALONE times in a row: what a fetch costs without any queue in front of it."""
    from campaigns.models import Turn

    seat = table["seats"][1]
    turn = Turn.objects.filter(campaign_id=table["id"]).order_by("-pk").values_list("pk").first()
    queries = ["board/", "approvals/", "feed/"] + ([f"feed/?turn={turn[0]}"] if turn else [])
    times = []
    for query in queries:
        path = f"/campaigns/{table['id']}/{query}"
        runs = [http_request(seat["port"], "GET", path, seat["cookie"], seat["csrf"], html=True)
                for _ in range(ALONE)]  # fmt: skip
        assert all(status == 200 for status, _, _ in runs), (path, [r[0] for r in runs])
        times.append(f"{query} {statistics.median(ms for *_, ms in runs):.1f} ms")
    print(f"one page alone, each fragment {ALONE} times in a row, median: " + ", ".join(times))


def main(
    seconds: int, gap: int, workers: int, servers: int, steps: list[int], spread: bool
) -> None:
    from django.db import connections

    done: list[Step] = []
    tables: list[dict[str, Any]] = []
    sampler = Backends()
    with tempfile.TemporaryDirectory(prefix="capacity-") as log_dir:
        processes, ports = start_procfile(servers, workers, log_dir)
        sampler.start()
        try:
            print(
                f"The Procfile's web: x{servers} ({procfile('web', {})[0]}) and worker: "
                f"x{workers}, PostgreSQL + Redis, production settings; scripted GM at "
                f"{GM_ROUND_DELAY:g} s a round and {GM_WORD_DELAY:g} s a word; each table 4 "
                f"players + its GM's page, one action every {gap:g} s on average (open "
                f"loop); pages in {CLIENT_PROCESSES} client processes; "
                + (
                    "a table's pages dealt round the web processes (--spread)"
                    if spread
                    else "a table's pages on one web process (routed by campaign)"
                ),
                flush=True,
            )
            for size in steps:
                if size > len(tables):
                    tables += build_tables(len(tables), size - len(tables), ports, spread)
                connections.close_all()
                step = Step(size, seconds, gap)
                pids = [p.pid for p in processes]  # the web processes first (start_procfile)
                run_step(step, tables[:size], (pids[:servers], pids[servers:]), sampler)
                report(step)
                if not done:
                    alone(tables[0])
                sys.stdout.flush()
                done.append(step)
                if sum(not s.pages_carried for s in done) == 2:  # one step past the pages'
                    break  # first miss (a step whose GM turns queue still tells of the pages)
        finally:
            sampler.stopping.set()
            stop_servers([(p, 0) for p in processes])
            for name in sorted(os.listdir(log_dir)):
                with open(os.path.join(log_dir, name)) as log:
                    if "Traceback" in (text := log.read()):
                        print(f"{name}:\n{text[-3000:]}")

    print("\nsteps:")
    print(
        f"{'tables':>6} {'actions/s':>9} {'events/s':>8} {'fetches/s':>9} {'own p95':>8}"
        f" {'others p95':>10} {'fetch p95':>9} {'GM start':>8} {'errors':>6} {'server CPU':>10}"
        f" {'PG+Redis':>8} {'clients':>7} {'backends':>8}  bar"
    )
    for step in done:
        own, others, fetch = (step.p(v, 95) for v in step.measures.values())
        minutes = step.tables * step.seconds / 60
        print(
            f"{step.tables:>6} {step.started / step.seconds:>9.2f}"
            f" {step.stats.events / step.seconds:>8.1f}"
            f" {gets(step.stats) / step.seconds:>9.1f}"
            f" {own:>8.1f} {others:>10.1f} {fetch:>9.1f}"
            f" {step.p(step.stats.gm_free_started, 95):>8.1f} {step.errors:>6}"
            f" {step.cpu['server'] / minutes:>10.2f} {step.cpu['pg_redis'] / minutes:>8.2f}"
            f" {step.cpu['clients'] / minutes:>7.2f} {max(step.backends):>8}"
            f"  {'met' if step.carried else 'missed'}"
            + ("" if step.carried or not step.pages_carried else " (the GM's start alone)")
        )
    print(
        "(p95 in ms, GM start from the later of its POST and its table's previous turn's end;"
        " CPU in seconds per table-minute)"
    )
    carried = [s.tables for s in done if s.carried]
    print(
        f"\nThis host carries {max(carried) if carried else 0} tables "
        f"(p95 <= {BAR_MS:g} ms on every measure, the GM's turns started within "
        f"{GM_START_MS:g} ms, zero errors; the largest step that met it"
        + (")" if carried else ": none did)")
    )
    pages = [s.tables for s in done if s.pages_carried]
    print(
        f"Its web processes carry {max(pages) if pages else 0} tables (the pages' measures alone, "
        f"with {workers} GM workers: past what they run at once, a GM turn waits for a worker)"
    )
    if any(s.errors for s in done):
        raise SystemExit(
            "FAILED: errors in " + ", ".join(f"{s.tables} tables" for s in done if s.errors)
        )


if __name__ == "__main__":
    run = sizes(
        __doc__,
        full={
            "seconds": 60,
            "gap": 15,
            "workers": 4,
            "servers": 2,
            "steps": [2, 5, 10, 20, 40, 60, 80],
        },
        smoke={"seconds": 3.8, "gap": 0.4, "workers": 1, "servers": 1, "steps": [2]},
        switches={
            "spread": "deal each table's pages round the web processes, not all to one (as a "
            "load balancer that does not route by campaign)"
        },
    )
    production_environment()
    with django_on_postgres("capacity"):
        main(**run)
