// Turns waiting on a held call (docs/api.md#paths, a turn's `waiting`): the server draws what a
// turn the GM has yet to answer waits for, on whom and since when. When a call is held or
// answered, every such turn on the page is drawn again, so the words follow the card: the held
// call's own turn is sent by the server (feed.js), the others are fetched.

import { on } from "./bus.js";
import { $$ } from "./http.js";
import { feed, refreshTurn, turnsOnTheirWay } from "./feed.js";

const WAITING = ["queued", "running", "awaiting_approval"];

// The waiting turns drawn on the page, and any turn whose drawing is still on its way (asked for
// before the call was held, it would arrive without the words): each is asked for again
// (`refreshTurn`: after the one on its way, unless that one shows the event), but the held
// call's own, which the server sends after the event.
function redrawWaiting({ turn: held, seq }) {
  const turns = new Set(turnsOnTheirWay());
  for (const turn of $$(":scope > .turn:not(.undone)", feed())) {
    if (WAITING.includes(turn.dataset.status)) turns.add(Number(turn.dataset.turn));
  }
  turns.delete(held);
  for (const turn of turns) refreshTurn(turn, seq);
}

on("approval_requested", redrawWaiting);
on("approval_resolved", redrawWaiting);
