// The live campaign table (docs/architecture.md#the-campaign-page-one-renderer-the-server): the page's one entry module, served as is (no build
// step, no CDN). It loads the page's modules, one concern each, and opens the live connection.
//
//   table/http.js      boot data, the REST API and the server's fragments
//   table/bus.js       the event bus: `on(type, handler)` is how a module hears events live
//   table/socket.js    the websocket: events in `seq` order, gaps and `hello` repaired by a resync
//   table/board.js     the board's parts (scene, map, combat, rosters, choices), drawn by the server
//   table/feed.js      the feed's turns and rolls, drawn by the server; the streaming narration
//   table/composer.js  the message box, Stop and Retry
//   table/undo.js      the undo dialog (its plan drawn by the server)
//   table/map.js       dragging and keyboard moves on the server's map
//   table/dice.js      rolling from the page
//   table/setup.js     set-up and GM's-hand forms posted in the background
//   table/approval.js  the approval card (held calls: the diff, Approve/Reject), drawn by the server
//   table/waiting.js   turns queued behind a held call, drawn again when it is held or answered
//   table/alerts.js    the approvers' alert: title and top-bar badge, phone banner, notification
//   table/attention.js the chip that brings an unseen reply, message or approval card into view
//
// One renderer (docs/architecture.md): the server draws every fragment of the page; these
// modules decide which fragment to fetch (the board and most turns come down the socket
// unasked), and where it goes. None holds a copy of the game.

import "./table/board.js";
import "./table/feed.js";
import "./table/composer.js";
import "./table/undo.js";
import "./table/map.js";
import "./table/dice.js";
import "./table/setup.js";
import "./table/approval.js";
import "./table/waiting.js";
import "./table/alerts.js";
import "./table/attention.js";
import { refreshUndo, feed } from "./table/feed.js";
import { connect } from "./table/socket.js";

export { on as onEvent } from "./table/bus.js";
export { API, PAGE, UNREACHABLE, csrfToken, fetchHTML, problem, request } from "./table/http.js";
export { resync } from "./table/socket.js";

refreshUndo();
feed().scrollTop = feed().scrollHeight;
// After every module of the page has run (module scripts run before this event), so each has
// subscribed to the bus before the first event can arrive.
document.addEventListener("DOMContentLoaded", connect);
