// The board (scene, map, combat tracker, rosters, the forms' choices) is drawn by the server
// only, with the templates the page was drawn with: after each event that changed the world the
// server sends it down the socket (socket.js, `boardSent`), and after a gap in the events the
// page fetches it (`/campaigns/{id}/board/`, `refreshBoard`); this module swaps its parts in.
// The fragment carries the number of the last event it reflects, so an older drawing never
// replaces a newer one.

import { $, $$, PAGE, boot, fetchHTML, fragment, pause } from "./http.js";

let shownSeq = boot.seq;
const swaps = new Map(); // part name -> (old, fresh) => void: how a part takes its fresh copy

// A part that keeps state of its own across redraws (the map's tokens: focus, a drag, their
// glide) swaps itself in; the others are replaced whole.
export function onPart(name, swap) {
  swaps.set(name, swap);
}

// A card that changed since it was last drawn glows once; one that did not keeps its node.
function swapRoster(old, fresh) {
  const before = new Map($$(".cards > [data-creature]", old).map((c) => [c.dataset.creature, c]));
  for (const card of $$(".cards > [data-creature]", fresh)) {
    const was = before.get(card.dataset.creature);
    if (!was) continue;
    was.classList.remove("changed");
    if (was.outerHTML === card.outerHTML) card.replaceWith(was);
    else card.classList.add("changed");
  }
  old.replaceWith(fresh);
}

function refill(select, template) {
  const chosen = select.value;
  select.replaceChildren(...[...template.content.children].map((option) => option.cloneNode(true)));
  if ([...select.options].some((option) => option.value === chosen)) select.value = chosen;
}

export function swapIn(fresh) {
  const seq = Number(fresh.dataset.seq);
  if (seq < shownSeq) return;
  shownSeq = seq;
  for (const part of $$(":scope > [data-part]", fresh)) {
    const name = part.dataset.part;
    const old = $(`[data-part="${name}"]`);
    if (!old) continue;
    const swap = swaps.get(name) ?? (name.startsWith("roster-") ? swapRoster : null);
    if (swap) swap(old, part);
    else old.replaceWith(part);
  }
  for (const template of $$(":scope > template[data-options]", fresh)) {
    for (const select of $$(`select[data-options="${template.dataset.options}"]`)) {
      refill(select, template);
    }
  }
}

let running = null;
let again = false;

// Fetch the board and swap it in; a request made while one is on its way is answered by one
// more fetch after it, so the last event's change is always drawn.
export function refreshBoard() {
  if (running) {
    again = true;
    return running;
  }
  running = (async () => {
    for (let attempt = 0; ; ) {
      again = false;
      try {
        swapIn(await fetchHTML(`${PAGE}/board/`));
        attempt = 0;
      } catch {
        attempt += 1;
        again = attempt < 5;
        await pause(500 * 2 ** attempt);
      }
      if (!again) break;
    }
    running = null;
  })();
  return running;
}

// The board the server sent after an event; null when it could not draw it: fetched instead.
export function boardSent(html) {
  if (html === null) refreshBoard();
  else swapIn(fragment(html).firstElementChild);
}
