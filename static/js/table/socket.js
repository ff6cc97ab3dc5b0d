// The live connection (docs/api.md#the-live-feed-websocket). Events are numbered per campaign: they go to the bus in
// order; a gap still open after REORDER_WAIT means one was lost, and the page reloads the
// feed and the board from the server instead of drifting. Every connection opens with `hello`
// {seq: the campaign's last event}: a page that has seen less catches up the same way. The
// socket asks for the board, the turns, the entries outside any turn and the approval card too
// (`?fragments=board,turn,roll,change,approvals`): the server sends them,
// drawn for this page, after the events that changed them, and the page swaps them in
// (board.js, feed.js, approval.js). They carry no `seq` of their own: their `data-seq` orders them.

import { approvalSent } from "./approval.js";
import { boardSent, refreshBoard } from "./board.js";
import { emit } from "./bus.js";
import { $, boot, pause } from "./http.js";
import { entrySent, reloadFeed, turnSent } from "./feed.js";

let lastSeq = boot.seq;
let socket = null;
let resyncing = null;
const held = [];

// Events published by two server processes (a worker's and a web server's) can arrive out of
// commit order: an event past a gap waits a moment for the missing ones.
const REORDER_WAIT = 500;
let gapTimer = null;

function apply(event) {
  lastSeq = event.seq;
  emit(event);
}

function drainHeld() {
  held.sort((a, b) => a.seq - b.seq);
  while (held.length && held[0].seq <= lastSeq + 1) {
    const next = held.shift();
    if (next.seq === lastSeq + 1) apply(next);
  }
  if (!held.length && gapTimer) {
    clearTimeout(gapTimer);
    gapTimer = null;
  }
}

function receive(event) {
  if (!Number.isInteger(event.seq)) return;
  if (resyncing) {
    held.push(event);
    return;
  }
  if (event.seq <= lastSeq) return;
  if (event.seq > lastSeq + 1) {
    held.push(event);
    gapTimer ??= setTimeout(() => {
      gapTimer = null;
      if (held.length) resync();
    }, REORDER_WAIT);
    return;
  }
  apply(event);
  drainHeld();
}

// The feed (with the event number it reflects), then the board (as new or newer), then what
// arrived meanwhile: each event only makes the page fetch what it changed again.
async function reload() {
  const seq = await reloadFeed();
  await refreshBoard();
  lastSeq = seq;
  emit({ type: "resynced", seq });
}

export function resync() {
  clearTimeout(gapTimer);
  gapTimer = null;
  resyncing ??= (async () => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await reload();
        break;
      } catch {
        setLive("closed", "catching up…");
        await pause(Math.min(1000 * 2 ** attempt, 15000));
      }
    }
    resyncing = null;
    if (socket?.readyState === WebSocket.OPEN) setLive("open", "live");
    for (const event of held.splice(0).sort((a, b) => a.seq - b.seq)) {
      if (event.seq > lastSeq) apply(event);
    }
  })();
  return resyncing;
}

function setLive(mode, text) {
  const live = $("#live");
  live.dataset.state = mode;
  live.textContent = text;
}

export const offline = () => socket?.readyState !== WebSocket.OPEN;

let failures = 0;

export function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws/campaigns/${boot.campaign}/?fragments=board,turn,roll,change,approvals`);
  socket.addEventListener("open", () => {
    setLive("open", "live");
    failures = 0;
  });
  socket.addEventListener("message", (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    if (event.type === "fragment") {
      if (event.part === "board") boardSent(event.html);
      else if (event.part === "turn") turnSent(event.turn, event.html);
      else if (event.part === "approvals") approvalSent(event.html);
      else if (event.part === "roll" || event.part === "change") {
        entrySent(event.part, event[event.part], event.html);
      }
    } else if (event.type !== "hello") receive(event);
    else if (Number.isInteger(event.seq) && event.seq > lastSeq) resync();
  });
  socket.addEventListener("close", () => {
    setLive("closed", "reconnecting…");
    failures += 1;
    setTimeout(connect, Math.min(500 * 2 ** failures, 15000));
  });
}
