// The feed is drawn by the server: whole (`/feed/`), one turn (`/feed/?turn=`) or one roll
// (`/feed/?roll=`), so it reads the same live and after a reload. This module only decides
// which fragment to fetch when an event arrives, and where it goes. A turn's new message, its
// end and its undo need no fetch: the server sends the turn down the socket (`turnSent`), as it
// sends a player's roll and a change made outside any turn (`entrySent`). The one thing it
// writes itself is the GM's narration as it streams, into the hidden message the server drew.

import { lastDrawnSeq, on } from "./bus.js";
import { $, $$, PAGE, fetchHTML, fragment } from "./http.js";

export const feed = () => $("#feed");

export function keepingScroll(change) {
  const list = feed();
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  change();
  if (atBottom) feed().scrollTop = feed().scrollHeight;
}

export const turnNode = (turnId) => $(`:scope > [data-turn="${turnId}"]`, feed());

const streamed = new Map(); // turn id -> the narration so far
const asked = new Set(); // turn ids this page has asked for
const fetching = new Set(); // turn ids with a request on its way
const again = new Map(); // turn id -> the newest event its drawing on its way must also reflect
const sending = new Set(); // turn ids the server is to send (an event said so)
const placedAt = new Map(); // turn id -> the event number its drawing on the page was drawn at
const wordsAsked = new Map(); // turn id -> the event number it was last fetched at for its words

// The event number the turn on the page was drawn at (its `data-seq`), or -Infinity.
function drawnAt(turnId) {
  const at = placedAt.get(turnId) ?? Number(turnNode(turnId)?.dataset.seq);
  return Number.isFinite(at) ? at : -Infinity;
}

// A drawing of a turn at event number `at`: on the page it may only replace one as new or older.
function newest(turnId, at) {
  if (Number.isFinite(at) && at < drawnAt(turnId)) return false;
  if (Number.isFinite(at)) placedAt.set(turnId, at);
  return true;
}

// The turns whose drawing is on its way: a drawing asked for before an event may predate it.
export const turnsOnTheirWay = () => [...fetching, ...sending];

// A turn this page draws: in the feed, or asked for (its first drawing may still be on its way,
// and may predate the event at hand: it is asked for again).
const known = (turnId) => turnId !== null && (Boolean(turnNode(turnId)) || asked.has(turnId));

// The narration replaces the note that the GM is thinking in the server's drawing of the turn.
function showStream(block, turnId) {
  const node = $(":scope > .msg.streaming", block);
  if (!node || !streamed.has(turnId)) return Boolean(node);
  $(":scope > .thinking", block)?.remove();
  node.hidden = false;
  $(".text", node).textContent = streamed.get(turnId);
  return true;
}

// Swap one turn for the server's rendering of it, which reflects event `seq` (the event that
// asked for it; by default whatever happened until now). One request per turn is on its way at
// a time: an event that asks meanwhile gets one more after it, unless the drawing that arrives
// already reflects that event (its `data-seq`, the last event the server drew it at: the GM's
// last message and the turn's end are committed together, and one drawing shows both).
export async function refreshTurn(turnId, seq = Infinity) {
  asked.add(turnId);
  if (fetching.has(turnId)) {
    again.set(turnId, Math.max(again.get(turnId) ?? -Infinity, seq));
    return;
  }
  fetching.add(turnId);
  try {
    for (;;) {
      again.delete(turnId);
      let fresh = null;
      try {
        fresh = await fetchHTML(`${PAGE}/feed/?turn=${turnId}`);
      } catch {
        // the next event, or the next reload of the feed, brings it
      }
      if (fresh) place(turnId, fresh);
      const wanted = again.get(turnId);
      if (wanted === undefined || (fresh && Number(fresh.dataset.seq) >= wanted)) break;
    }
  } finally {
    again.delete(turnId);
    fetching.delete(turnId);
  }
}

// The turn the server sent after an event; null when it could not draw it: fetched instead.
export function turnSent(turnId, html) {
  sending.delete(turnId);
  if (html === null) refreshTurn(turnId);
  else place(turnId, fragment(html).firstElementChild);
}

function place(turnId, fresh) {
  if (!newest(turnId, Number(fresh.dataset.seq))) return;
  if (!$(":scope > .msg.streaming", fresh)) streamed.delete(turnId); // the GM has finished
  keepingScroll(() => {
    showStream(fresh, turnId);
    const old = turnNode(turnId);
    const later = $$(":scope > [data-turn]", feed()).find((b) => Number(b.dataset.turn) > turnId);
    if (old) old.replaceWith(fresh);
    else feed().insertBefore(fresh, later ?? null);
  });
  refreshUndo();
  // A retry's first sight: the undone turn it retries no longer offers Retry.
  const retried = fresh.dataset.retryOf && turnNode(fresh.dataset.retryOf);
  if (retried && !retried.dataset.retried) refreshTurn(Number(fresh.dataset.retryOf));
  // ... and a redo's: the undone turn it puts back says so (and no longer offers Redo), on every
  // page, those that could not redo it included.
  const redone = fresh.dataset.redoOf && turnNode(fresh.dataset.redoOf);
  if (redone && !redone.dataset.redone) refreshTurn(Number(fresh.dataset.redoOf));
}

// A hidden slot at the end of the feed that an entry's fragment replaces when it arrives.
function holdPlace(kind, key) {
  const slot = document.createElement("li");
  slot.dataset[kind] = key;
  slot.hidden = true;
  keepingScroll(() => feed().append(slot));
  return slot;
}

// Entries outside any turn the server sent before the event that asks for them was applied (an
// event can wait behind a gap a moment; the fragment does not): key -> html, taken when it is.
const arrived = new Map();
const ARRIVED_KEPT = 50; // those no event of this page asks for (an undo of an entry not shown)

const entryNode = (kind, key) => $(`:scope > [data-${kind}="${key}"]`, feed());

// An entry the server sent down the socket (web/pages/fragments.py, `ENTRIES`): it fills the
// place held for it; "" is one not to tell (its place is taken back), null one the server
// could not draw (fetched).
export function entrySent(kind, key, html) {
  const node = entryNode(kind, key);
  if (html === null) {
    if (node) fetchEntry(kind, key, kind === "roll" ? `roll=${key}` : `change=${key}`);
    return;
  }
  if (!node) {
    arrived.set(`${kind}:${key}`, html);
    if (arrived.size > ARRIVED_KEPT) arrived.delete(arrived.keys().next().value);
    return;
  }
  fill(node, html);
}

function fill(node, html) {
  const drawn = html ? fragment(html).firstElementChild : null;
  if (drawn) keepingScroll(() => node.replaceWith(drawn));
  else if (node.hidden) node.remove();
}

// The entry's place is held at once; its drawing comes down the socket (or arrived already),
// or is fetched: `fetchIt` when the socket is not there to bring it.
function drawEntry(kind, key, query, { fetchIt = false } = {}) {
  const node = entryNode(kind, key) ?? holdPlace(kind, key);
  const sent = arrived.get(`${kind}:${key}`);
  if (sent !== undefined) {
    arrived.delete(`${kind}:${key}`);
    fill(node, sent);
  } else if (fetchIt) fetchEntry(kind, key, query);
}

async function fetchEntry(kind, key, query) {
  try {
    const drawn = await fetchHTML(`${PAGE}/feed/?${query}`);
    keepingScroll(() => entryNode(kind, key)?.replaceWith(drawn));
  } catch {
    const slot = entryNode(kind, key);
    if (slot?.hidden) slot.remove(); // not one to tell (or the next reload of the feed brings it)
  }
}

// A player's roll is an entry of its own: a hidden slot takes its place in the feed at once and
// is filled when the server sends it, so rolls stay in the order they were announced; the
// roller's page, whose socket is down, fetches it (dice.js). A GM's roll is part of its turn,
// which is drawn again.
export function drawRoll(rollId, turnId, seq, { fetchIt = false } = {}) {
  if (turnId !== null && turnId !== undefined) {
    refreshTurn(turnId, seq);
    return;
  }
  const node = entryNode("roll", rollId);
  if (node && !node.hidden) return;
  drawEntry("roll", rollId, `roll=${rollId}`, { fetchIt });
}

// Which of the offers the server drew for each turn stand, given the turns around it: only the
// most recent GM turn offers Undo (each change by the GM's own hand offers its own), and "Rewind
// to here" with "Undo this and what depends on it" (the server's answer per turn: may this user
// revert it and every later one) stand
// on every turn but the newest, while every later turn answers yes too: a turn drawn when it
// was the newest carries the button hidden, and shows it once a later turn arrives.
export function refreshUndo() {
  const latest = $$(":scope > .turn[data-gm='1']", feed()).at(-1);
  for (const button of $$(".undo", feed())) {
    const turn = button.closest(".turn");
    button.hidden = turn !== latest && turn.dataset.hand !== "1";
  }
  const live = $$(":scope > .turn:not(.undone)", feed()).reverse();
  let allowed = true;
  for (const [index, turn] of live.entries()) {
    allowed = allowed && turn.dataset.from === "1";
    for (const button of $$(":scope > .undo-from, :scope > .rewind", turn)) {
      button.hidden = !allowed || index === 0; // the newest offers its own Undo
    }
  }
}

// Until the server's rendering of the undone turn arrives, it offers no Undo.
function markUndone(turnId) {
  const block = turnNode(turnId);
  if (!block) return;
  block.classList.add("undone");
  block.dataset.gm = "0";
  refreshUndo();
}

// The whole feed again (after a gap in the events): the number of the last event it reflects.
export async function reloadFeed() {
  const fresh = await fetchHTML(`${PAGE}/feed/`);
  for (const block of $$(":scope > [data-turn]", fresh)) showStream(block, Number(block.dataset.turn));
  placedAt.clear(); // the turns' own `data-seq` now
  feed().replaceWith(fresh);
  fresh.scrollTop = fresh.scrollHeight;
  refreshUndo();
  return Number(fresh.dataset.seq);
}

// The server sends the turn after these events (web/pages/fragments.py, TURN_EVENTS), unless
// the drawing on the page shows the event already.
function toBeSent(turn, seq) {
  asked.add(turn);
  if (drawnAt(turn) < seq) sending.add(turn);
}

on("message_created", ({ turn, seq }) => toBeSent(turn, seq));

// A turn resumed (its worker was lost, or its held call answered) tells its narration again
// from the start: the server sends it.
on("gm_turn_started", ({ turn, data, seq }) => {
  if (data.attempt <= 1 || !turnNode(turn)) return;
  streamed.delete(turn);
  toBeSent(turn, seq);
});

// Streamed words the turn's drawing has no place for ask for the turn, unless a drawing of it
// is on its way, or the one on the page is as new as the newest event that may change it (the
// words do not: `lastDrawnSeq`): then it shows the turn as the server draws it now, finished or
// undone (a drawing sent after a later event may arrive before the words), and a fetch would
// bring the same drawing. So words fetch a turn at most once per event that may change it.
function wordsAskFor(turnId) {
  const at = lastDrawnSeq();
  if (fetching.has(turnId) || sending.has(turnId)) return false;
  if (Math.max(drawnAt(turnId), wordsAsked.get(turnId) ?? -Infinity) >= at) return false;
  wordsAsked.set(turnId, at);
  return true;
}

on("gm_text_delta", ({ turn, data }) => {
  streamed.set(turn, (streamed.get(turn) ?? "") + data.text);
  const block = turnNode(turn);
  let shown = false;
  keepingScroll(() => {
    shown = Boolean(block) && showStream(block, turn);
  });
  if (!shown && wordsAskFor(turn)) refreshTurn(turn);
});

on("gm_turn_completed", ({ turn, seq }) => toBeSent(turn, seq));

on("dice_rolled", ({ turn, data, seq }) => drawRoll(data.id, turn, seq));

// A token dragged on the map and a creature added through the set-up join no turn: each is
// an entry of its own, drawn by the server: a change is sent down the socket (made, and undone:
// `entrySent`), a creature added fetched (`/feed/?added=<creature>`), once however many of its
// events arrive.
const changeNode = (key) => entryNode("change", key);

export function drawChange(key, query, { fetchIt = false } = {}) {
  if (changeNode(key)) return;
  drawEntry("change", key, query, { fetchIt });
}

// A change by someone's own hand sits in a turn of its own, which the GM never completes: its
// tool call is drawn in the feed now.
on("state_changed", ({ source, turn, invocation, data, seq }) => {
  if (source !== "user") return;
  if (known(turn)) refreshTurn(turn, seq);
  else if (turn === null && invocation) drawChange(invocation, `change=${invocation}`);
  else if (turn === null && data.entity === "creature" && !data.facet && data.fields) {
    drawChange(`added-${data.id}`, `added=${data.id}`, { fetchIt: true });
  }
});

// A call held: its turn says what it waits for and on whom; answered: who approved, rejected
// or withdrew it, and why. The server sends the turn (TURN_EVENTS).
on("approval_requested", ({ turn, seq }) => toBeSent(turn, seq));
on("approval_resolved", ({ turn, seq }) => toBeSent(turn, seq));

on("invocation_reverted", ({ turn, seq }) => {
  if (known(turn)) refreshTurn(turn, seq);
  // outside any turn: the server sends the change again, undone (`entrySent`)
});

on("interaction_reverted", ({ turn, data, seq }) => {
  markUndone(turn);
  toBeSent(turn, seq);
  // An undo with cascade also reverted later turns' calls: redraw the later turns that made
  // any, and the "Undo from here" offers may change with them.
  if (data.invocations?.length > 1) {
    for (const block of $$(":scope > .turn", feed())) {
      const later = Number(block.dataset.turn) > turn;
      if (later && $(":scope > .calls", block)) refreshTurn(Number(block.dataset.turn), seq);
    }
  }
});
