// The page's event bus: every websocket event, in `seq` order, goes to each handler of its type.
// It is how a module of the page hears the table live. To add a live part to the page, write a
// module that subscribes here and import it from table.js:
//
//   import { on } from "./table/bus.js";
//   on("approval_requested", (event) => ...);
//
// Handlers receive the event as docs/api.md#the-live-feed-websocket describes it ({type, source, campaign, seq, turn,
// invocation, data, at}). Several modules may listen to one type; none draws the game's facts
// itself: they fetch the server's fragment for what changed, or take the one the server sends
// (board.js, feed.js).

const handlers = new Map();

// The number of the newest event that may have changed what the server draws: any but the GM's
// streamed words, which raise no drawing's number (the campaign's `drawn_seq`,
// web/pages/fragments.py). A drawing of that number or later is as new as the page knows of.
let drawnSeq = -Infinity;
export const lastDrawnSeq = () => drawnSeq;

export function on(type, handler) {
  if (!handlers.has(type)) handlers.set(type, []);
  handlers.get(type).push(handler);
}

export function emit(event) {
  if (event.type !== "gm_text_delta" && Number.isFinite(event.seq)) {
    drawnSeq = Math.max(drawnSeq, event.seq);
  }
  for (const handler of handlers.get(event.type) ?? []) handler(event);
}
