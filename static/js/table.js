// The live campaign table (SPEC §7, §8). One ES module, served as is: no build step.
//
// The board is drawn from a copy of the campaign's canonical state dump; websocket events are
// applied to that copy and the board is redrawn from it. Events are numbered per campaign: a
// gap means one was lost, so the page refetches `/state/` and the feed instead of drifting.
// The feed comes from the server as HTML, whole or one turn at a time, so it reads the same
// live and after a reload. Everything that changes the game goes through the REST API.

const boot = JSON.parse(document.getElementById("table-data").textContent);
export const API = `/api/campaigns/${boot.campaign}`;
export const PAGE = `/campaigns/${boot.campaign}`;
export const csrfToken = document.querySelector("#say [name=csrfmiddlewaretoken]").value;
export const people = boot.people;

let state = boot.state;
let lastSeq = boot.seq;
let socket = null;

const $ = (selector, root = document) => root.querySelector(selector);
const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];
export const feed = () => $("#feed");

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

function fragment(html) {
  const template = document.createElement("template");
  template.innerHTML = html.trim();
  return template.content;
}

// ---- talking to the server ---------------------------------------------------------------

export function request(method, url, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    headers["X-CSRFToken"] = csrfToken;
  }
  return fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export async function fetchHTML(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return fragment(await response.text()).firstElementChild;
}

export async function problem(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    return Object.entries(body)
      .map(([field, errors]) => `${field}: ${[].concat(errors).join(" ")}`)
      .join("; ");
  } catch {
    return `The server answered ${response.status}. Please try again.`;
  }
}

export const UNREACHABLE = "Could not reach the table. Check your connection and try again.";

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the board: a copy of the state dump, redrawn from it ----------------------------------

const COLLECTIONS = {
  creature: "creatures",
  resource: "resources",
  item: "items",
  encounter: "encounters",
  fog: "fog",
  chapter: "chapters",
  dungeon: "dungeons",
};
const CAMPAIGN_KEYS = {
  current_chapter_id: "current_chapter",
  active_dungeon_id: "active_dungeon",
  active_encounter_id: "active_encounter",
};

// Apply one `state_changed` payload. False when it cannot be applied faithfully.
function applyChange({ entity, id, fields, deleted }) {
  if (entity === "campaign") {
    for (const [key, value] of Object.entries(fields ?? {})) {
      state.campaign[CAMPAIGN_KEYS[key] ?? key] = value;
    }
    return true;
  }
  const rows = state[COLLECTIONS[entity]];
  if (!rows) return true; // not drawn on this page
  const index = rows.findIndex((row) => String(row.id) === String(id));
  if (deleted) {
    if (index >= 0) rows.splice(index, 1);
    return true;
  }
  if (index >= 0) {
    Object.assign(rows[index], fields);
    return true;
  }
  if (!("id" in fields)) return false; // a part of something this page never saw
  rows.push({ ...fields });
  rows.sort((a, b) => a.id - b.id);
  return true;
}

function applyChanges(changes) {
  const faithful = changes.map(applyChange).every(Boolean);
  renderBoard();
  if (!faithful) resync();
}

export const hpPercent = (c) => (c.max_hp > 0 ? Math.round((100 * c.hp) / c.max_hp) : 0);

export function hpBand(c) {
  if (c.hp <= 0) return "down";
  const percent = hpPercent(c);
  return percent > 50 ? "ok" : percent > 25 ? "hurt" : "critical";
}

const resourcesOf = (c) => state.resources.filter((r) => r.creature_id === c.id);
const itemsOf = (c) => state.items.filter((i) => i.creature_id === c.id);

function show(node, visible, text) {
  node.hidden = !visible;
  if (visible) node.textContent = text;
}

function fillList(list, rows, render) {
  list.replaceChildren(...rows.map(render));
  list.hidden = rows.length === 0;
}

function creatureCard(c) {
  const card = $("#creature-template").content.firstElementChild.cloneNode(true);
  card.className = `creature kind-${c.kind} band-${hpBand(c)}`;
  card.dataset.creature = c.id;
  $(".token", card).textContent = c.name.slice(0, 1).toUpperCase();
  $(".name", card).textContent = c.name;
  const player = people[c.controlled_by_id];
  $(".player", card).textContent = player ? `played by ${player}` : "";
  $(".pos", card).textContent = `◎ ${c.x},${c.y}`;
  $(".hp", card).setAttribute("aria-valuemax", c.max_hp);
  $(".hp", card).setAttribute("aria-valuenow", c.hp);
  $(".hp-fill", card).style.width = `${hpPercent(c)}%`;
  $(".hp-text", card).textContent = `${c.hp} / ${c.max_hp}`;
  show($(".temp", card), c.temp_hp > 0, `+${c.temp_hp} temp`);
  const saves = c.death_save_successes || c.death_save_failures;
  show(
    $(".saves", card),
    c.kind === "pc" && (c.hp === 0 || saves),
    `✓ ${c.death_save_successes} ✗ ${c.death_save_failures}`,
  );
  fillList($(".conditions", card), c.conditions, (condition) => h("li", {}, condition));
  fillList($(".resources", card), resourcesOf(c), (r) =>
    h(
      "li",
      {},
      h("span", { class: "res-name" }, r.name.replaceAll("_", " ")),
      " ",
      h("span", { class: "res-value" }, `${r.current}/${r.maximum}`),
    ),
  );
  fillList($(".items", card), itemsOf(c), (item) =>
    h("li", {}, `${item.name.replaceAll("_", " ")} ×${item.quantity}`),
  );
  return card;
}

const ROSTERS = [
  ["party", "pc"],
  ["foes", "monster"],
  ["others", "npc"],
];

function renderRosters() {
  for (const [key, kind] of ROSTERS) {
    const section = $(`#roster-${key}`);
    const list = $(".cards", section);
    const cards = state.creatures
      .filter((c) => c.kind === kind)
      .map((c) => {
        const sig = JSON.stringify([c, resourcesOf(c), itemsOf(c), people[c.controlled_by_id]]);
        const old = $(`:scope > [data-creature="${c.id}"]`, list);
        if (old?.dataset.sig === sig) return old;
        const card = creatureCard(c);
        card.dataset.sig = sig;
        if (old?.dataset.sig) card.classList.add("changed");
        return card;
      });
    list.replaceChildren(...cards);
    if (key === "others") section.hidden = cards.length === 0;
  }
}

function renderCombat() {
  const body = $("#combat .combat-body");
  const encounter = state.encounters.find((e) => e.id === state.campaign.active_encounter);
  if (!encounter) {
    body.replaceChildren(h("p", { class: "quiet" }, "No fight right now. The dice rest."));
    return;
  }
  const creatures = new Map(state.creatures.map((c) => [c.id, c]));
  const order = encounter.order.map((slot, index) => {
    const creature = creatures.get(slot.creature_id);
    const current = index === encounter.turn_index;
    const classes = [current && "current", !(creature?.hp > 0) && "down"].filter(Boolean);
    const item = h(
      "li",
      { class: classes.join(" "), dataset: { creature: slot.creature_id } },
      h("span", { class: "init" }, String(slot.initiative ?? "–")),
      h("span", { class: "combatant" }, creature?.name ?? "(gone)"),
    );
    if (current) item.setAttribute("aria-current", "true");
    return item;
  });
  body.replaceChildren(
    h("p", { class: "round" }, "Round ", h("strong", {}, String(encounter.round))),
    h("ol", { class: "initiative" }, ...order),
  );
}

function renderScene() {
  const { campaign } = state;
  const chapter = state.chapters.find((c) => c.id === campaign.current_chapter);
  const dungeon = state.dungeons.find((d) => d.id === campaign.active_dungeon);
  $("#scene .chapter").textContent = chapter ? `Chapter ${chapter.position} · ${chapter.title}` : "";
  $("#scene .location").textContent = campaign.location;
  $("#scene .scene-text").textContent = campaign.scene;
  $("#scene .dungeon-name").textContent = dungeon?.name ?? "";
  $("#scene .dungeon").hidden = !dungeon;
  $("#scene .banner-complete").hidden = campaign.status !== "completed";
}

// The page's other views of the board (map.js, setup.js) redraw what they own from the same
// copy of the state, after the page's own redraw (and once as they register).
const boardViews = [];

export function onBoard(view) {
  boardViews.push(view);
  view(state);
}
export const currentState = () => state;

export function renderBoard() {
  renderScene();
  renderCombat();
  renderRosters();
  for (const view of boardViews) view(state);
}

// ---- the feed ------------------------------------------------------------------------------

export function keepingScroll(change) {
  const list = feed();
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  change();
  if (atBottom) feed().scrollTop = feed().scrollHeight;
}

const turnNode = (turnId) => $(`:scope > [data-turn="${turnId}"]`, feed());

export function turnBlock(turnId) {
  let block = turnNode(turnId);
  if (!block) {
    block = h("li", { class: "turn", dataset: { turn: turnId, gm: "0", undoable: "0" } });
    feed().append(block);
  }
  return block;
}

// A turn's messages and rolls come before the GM's thinking note, its tool calls and buttons.
export function addToTurn(block, node) {
  block.insertBefore(node, $(":scope > :is(.thinking, .calls, .stop, .undo)", block));
}

function messageNode({ id, role, content, author }, source) {
  const ai = role === "gm" || source === "ai_tool_execution";
  const label =
    role === "gm"
      ? ["Game Master ", h("span", { class: "ai-badge" }, "AI")]
      : [role === "system" ? "Table" : (author ?? "someone")];
  return h(
    "div",
    { class: `msg role-${role} source-${source}${ai ? " ai" : ""}`, dataset: id ? { message: id } : {} },
    h("span", { class: "author" }, ...label),
    h("p", { class: "text" }, content),
  );
}

// The GM's narration as it streams takes the place of the note that the GM is thinking.
function streamingNode(block) {
  let node = $(":scope > .msg.streaming", block);
  if (!node) {
    node = messageNode({ role: "gm", content: "" }, "ai_tool_execution");
    node.classList.add("streaming");
    const thinking = $(":scope > .thinking", block);
    if (thinking) thinking.replaceWith(node);
    else addToTurn(block, node);
  }
  return node;
}

function onMessageCreated({ turn, source, data }) {
  if (data.id && $(`[data-message="${data.id}"]`, feed())) return;
  keepingScroll(() => {
    const node = messageNode(data, source);
    if (turn === null || turn === undefined) {
      feed().append(h("li", { class: "turn" }, node));
      return;
    }
    const block = turnBlock(turn);
    const streaming = data.role === "gm" && $(":scope > .msg.streaming", block);
    if (streaming) streaming.replaceWith(node);
    else addToTurn(block, node);
  });
  // The server draws the note that the GM is thinking, and the buttons this person may use.
  if (data.gm === "queued") refreshTurn(turn);
}

// A turn resumed after its worker was lost tells its narration again from the start.
function onTurnStarted({ turn, data }) {
  if (data.attempt <= 1) return;
  const block = turnNode(turn);
  if (!block) return;
  $(":scope > .msg.streaming", block)?.remove();
  refreshTurn(turn);
}

function onTextDelta({ turn, data }) {
  keepingScroll(() => $(".text", streamingNode(turnBlock(turn))).append(data.text));
}

const refreshing = new Map();

// Swap one turn for the server's rendering of it; a newer request for the same turn wins.
async function refreshTurn(turnId) {
  const generation = (refreshing.get(turnId) ?? 0) + 1;
  refreshing.set(turnId, generation);
  let fresh;
  try {
    fresh = await fetchHTML(`${PAGE}/feed/?turn=${turnId}`);
  } catch {
    return;
  }
  if (refreshing.get(turnId) !== generation) return;
  keepingScroll(() => {
    const old = turnNode(turnId);
    const streaming = old && $(":scope > .msg.streaming", old);
    const thinking = $(":scope > .thinking", fresh);
    if (streaming && thinking) thinking.replaceWith(streaming); // still speaking: keep its words
    const later = $$(":scope > [data-turn]", feed()).find((b) => Number(b.dataset.turn) > turnId);
    if (old) old.replaceWith(fresh);
    else feed().insertBefore(fresh, later ?? null);
  });
  refreshUndo();
  // A retry's first sight: the undone turn it retries no longer offers Retry.
  const retried = fresh.dataset.retryOf && turnNode(fresh.dataset.retryOf);
  if (retried && !retried.dataset.retried) refreshTurn(Number(fresh.dataset.retryOf));
}

// Only the most recent GM turn offers Undo, to those who may undo it; each change made by the
// GM's own hand offers its own. "Undo from here" is the server's answer per turn (may this
// user revert it and every later one); a later turn that answers no, or is not drawn by the
// server yet, withdraws it from every earlier turn.
function refreshUndo() {
  const latest = $$(":scope > .turn[data-gm='1']", feed()).at(-1);
  for (const button of $$(".undo", feed())) {
    const turn = button.closest(".turn");
    button.hidden = turn !== latest && turn.dataset.hand !== "1";
  }
  let allowed = true;
  for (const turn of $$(":scope > .turn:not(.undone)", feed()).reverse()) {
    allowed = allowed && turn.dataset.from === "1";
    const button = $(":scope > .undo-from", turn);
    if (button) button.hidden = !allowed;
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

// ---- events, in order ----------------------------------------------------------------------

const HANDLERS = {
  message_created: onMessageCreated,
  gm_turn_started: onTurnStarted,
  gm_text_delta: onTextDelta,
  gm_turn_completed: ({ turn }) => refreshTurn(turn),
  state_changed: ({ source, turn, data }) => {
    applyChanges([data]);
    // A change by someone's own hand sits in a turn of its own, which the GM never completes:
    // its tool call is drawn in the feed now.
    if (source === "user" && turn !== null && turnNode(turn)) refreshTurn(turn);
  },
  invocation_reverted: ({ turn, data }) => {
    applyChanges(data.state);
    if (turn !== null && turnNode(turn)) refreshTurn(turn);
  },
  interaction_reverted: ({ turn, data }) => {
    applyChanges(data.state);
    markUndone(turn);
    refreshTurn(turn);
    // An undo with cascade also reverted later turns' calls: redraw the later turns that made
    // any, and the "Undo from here" offers may change with them.
    if (data.invocations?.length > 1) {
      for (const block of $$(":scope > .turn", feed())) {
        const later = Number(block.dataset.turn) > turn;
        if (later && $(":scope > .calls", block)) refreshTurn(Number(block.dataset.turn));
      }
    }
  },
};

// The page's other modules (dice.js) handle event types of their own: one handler a type.
export function onEvent(type, handler) {
  if (type in HANDLERS) throw new Error(`${type} already has a handler`);
  HANDLERS[type] = handler;
}

let resyncing = null;
const held = [];

// Events published by two server processes (a worker's and a web server's) can arrive out of
// commit order: an event past a gap waits a moment for the missing ones, and only a gap still
// open after REORDER_WAIT means an event was lost, which a resync repairs.
const REORDER_WAIT = 500;
let gapTimer = null;

function apply(event) {
  lastSeq = event.seq;
  HANDLERS[event.type]?.(event);
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

// Fetch the feed (with the event number it reflects) and then the state, redraw both, then
// apply what arrived meanwhile. Events carry absolute values, so one the fresh state already
// reflects is harmless to apply again.
async function reload() {
  const freshFeed = await fetchHTML(`${PAGE}/feed/`);
  const response = await request("GET", `${API}/state/`);
  if (!response.ok) throw new Error(`state answered ${response.status}`);
  state = await response.json();
  lastSeq = Number(freshFeed.dataset.seq);
  feed().replaceWith(freshFeed);
  freshFeed.scrollTop = freshFeed.scrollHeight;
  renderBoard();
  refreshUndo();
}

function resync() {
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
      if (event.seq <= lastSeq) continue;
      lastSeq = event.seq;
      HANDLERS[event.type]?.(event);
    }
  })();
  return resyncing;
}

// ---- the websocket ---------------------------------------------------------------------------

function setLive(mode, text) {
  const live = $("#live");
  live.dataset.state = mode;
  live.textContent = text;
}

let failures = 0;

// Every connection opens with `hello` {seq: the campaign's last event}: a page that has seen
// less missed events (while it was away, or before its first connection) and catches up.
function greet(hello) {
  if (Number.isInteger(hello.seq) && hello.seq > lastSeq) resync();
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws/campaigns/${boot.campaign}/`);
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
    if (event.type === "hello") greet(event);
    else receive(event);
  });
  socket.addEventListener("close", () => {
    setLive("closed", "reconnecting…");
    failures += 1;
    setTimeout(connect, Math.min(500 * 2 ** failures, 15000));
  });
}

const offline = () => socket?.readyState !== WebSocket.OPEN;

// ---- the message box -------------------------------------------------------------------------

const say = $("#say");

function sayError(text) {
  show($(".say-error", say), Boolean(text), text);
}

// The box empties at once: the server queues the turn for the GM and answers without waiting
// for it. Only a message the server refused comes back into the box (unless a new one is
// being typed), with the reason.
say.addEventListener("submit", async (event) => {
  event.preventDefault();
  const box = say.elements.message;
  const message = box.value.trim();
  if (!message) return;
  box.value = "";
  box.focus();
  sayError("");
  feed().scrollTop = feed().scrollHeight;
  const refused = (text) => {
    if (!box.value) box.value = message;
    sayError(text);
  };
  try {
    const response = await request("POST", `${API}/turns/`, { message });
    if (!response.ok) refused(await problem(response));
    else if (offline()) resync();
  } catch {
    refused(UNREACHABLE);
  }
});

say.elements.message.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    say.requestSubmit();
  }
});

// ---- the undo dialog -----------------------------------------------------------------------
// The server draws the plan (each change in plain words, before → after, the later changes in
// the way) as a fragment; the script only swaps it in, and confirms through the API.

const dialog = $("#undo-dialog");
const undoForm = $(".undo-form", dialog);
const confirmButton = $("button[value=confirm]", dialog);
const keepButton = $("button[value=cancel]", dialog);
let undoing = null;

function undoStatus(text) {
  $(".undo-status", dialog).textContent = text;
}

function undoError(text) {
  show($(".undo-error", dialog), Boolean(text), text);
}

// A refusal shows its message alone: no plan, no reason box, no button that cannot work.
function refused(text) {
  undoStatus("");
  undoError(text);
  $(".undo-plan", dialog).hidden = true;
  $(".reason", dialog).hidden = true;
  confirmButton.hidden = true;
  keepButton.textContent = "Close";
}

function openUndo(turnId, cascade = false) {
  undoing = { turn: turnId, cascade };
  $(".undo-plan", dialog).replaceChildren();
  $(".undo-plan", dialog).hidden = false;
  $(".reason", dialog).hidden = false;
  confirmButton.hidden = false;
  confirmButton.disabled = true;
  confirmButton.textContent = cascade ? "Undo from here" : "Undo turn";
  keepButton.textContent = "Keep the turn";
  undoForm.elements.reason.value = "";
  undoError("");
  undoStatus("Working out what this undo changes…");
  dialog.showModal();
  loadPlan();
}

async function loadPlan() {
  const { turn, cascade } = undoing;
  let response;
  try {
    response = await fetch(`${PAGE}/undo-plan/?turn=${turn}${cascade ? "&cascade=1" : ""}`, {
      credentials: "same-origin",
      headers: { Accept: "text/html" },
    });
  } catch {
    undoError(UNREACHABLE);
    return;
  }
  if (undoing?.turn !== turn || undoing.cascade !== cascade) return;
  if (response.status === 404) {
    refused("This turn is gone: someone may have undone it.");
    return;
  }
  const text = await response.text();
  if (!response.ok) {
    refused(text);
    return;
  }
  const plan = fragment(text).firstElementChild;
  $(".undo-plan", dialog).replaceWith(plan);
  undoStatus("");
  confirmButton.disabled = plan.dataset.blocked === "1";
  const box = undoForm.elements.cascade;
  box?.addEventListener("change", (event) => {
    undoing.cascade = event.target.checked;
    confirmButton.disabled = true;
    undoStatus("Working out what this undo changes…");
    loadPlan();
  });
}

undoForm.addEventListener("submit", async (event) => {
  if (event.submitter?.value !== "confirm") return; // "Keep the turn" just closes the dialog
  event.preventDefault();
  const { turn, cascade } = undoing;
  confirmButton.disabled = true;
  undoError("");
  undoStatus("Undoing…");
  try {
    const response = await request("POST", `${API}/turns/${turn}/undo/`, {
      reason: undoForm.elements.reason.value.trim(),
      cascade,
    });
    if (response.ok) {
      const result = await response.json();
      if (offline()) resync();
      if (!result.skipped?.length) {
        dialog.close();
        return;
      }
      undoStatus(`Undone, except ${result.skipped.length} change(s) that could not be reverted.`);
      return;
    }
    if (response.status === 409) {
      undoStatus("");
      undoError((await response.json()).detail ?? "Later turns depend on this one.");
      await loadPlan();
      confirmButton.disabled = true;
      return;
    }
    refused(await problem(response));
  } catch {
    undoStatus("");
    undoError(UNREACHABLE);
    confirmButton.disabled = false;
  }
});

dialog.addEventListener("close", () => {
  undoing = null;
});

// ---- Stop and Retry: the server offers them to whom it lets use them -------------------------

async function turnAction(button, turnId, action) {
  button.disabled = true;
  sayError("");
  try {
    const response = await request("POST", `${API}/turns/${turnId}/${action}/`, {});
    if (!response.ok) sayError(await problem(response));
    else if (offline()) resync();
  } catch {
    sayError(UNREACHABLE);
  }
  refreshTurn(turnId);
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.undo, button.undo-from, button.stop, button.retry");
  if (!button) return;
  if (button.dataset.undo) openUndo(Number(button.dataset.undo));
  else if (button.dataset.undoFrom) openUndo(Number(button.dataset.undoFrom), true);
  else if (button.dataset.stop) turnAction(button, Number(button.dataset.stop), "cancel");
  else turnAction(button, Number(button.dataset.retry), "retry");
});

// ---- start -----------------------------------------------------------------------------------

renderBoard();
refreshUndo();
feed().scrollTop = feed().scrollHeight;
// After every module of the page has run (deferred scripts run before this event), so each
// has registered its handlers before the first event can arrive.
document.addEventListener("DOMContentLoaded", connect);
