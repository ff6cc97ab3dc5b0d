// Turns waiting on a held call (docs/api.md#paths, a turn's `waiting`): the server draws what a
// turn the GM has yet to answer waits for, on whom and since when. When a call is held or
// answered, every such turn on the page is drawn again, so the words follow the card.

import { on } from "./bus.js";
import { $$ } from "./http.js";
import { feed, refreshTurn } from "./feed.js";

const WAITING = ["queued", "running", "awaiting_approval"];

function redrawWaiting() {
  for (const turn of $$(":scope > .turn:not(.undone)", feed())) {
    if (WAITING.includes(turn.dataset.status)) refreshTurn(Number(turn.dataset.turn));
  }
}

on("approval_requested", redrawWaiting);
on("approval_resolved", redrawWaiting);
