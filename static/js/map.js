// The battle map (SPEC §8 Play aids): an SVG grid with a token per creature at its x,y, fog from
// `reveal_fog`, the active combatant highlighted. One renderer: drawn here from the page's copy
// of the state dump (table.js keeps it live from the websocket), so a move, a hit or an undo
// redraws the map as it redraws the cards; the server sends facts, never markup for tokens.
//
// A move is `POST /api/campaigns/{id}/creatures/{cid}/move/` (the `move_token` tool through the
// audited dispatch, source `user`); every page sees it when its `state_changed` event arrives,
// and the mover may undo it (the invocation's revert), which every page sees the same way.

import { API, hpBand, onBoard, problem, request, UNREACHABLE } from "./table.js";

const SVG = "http://www.w3.org/2000/svg";
const CELL = 40;
const MIN_COLS = 12;
const MIN_ROWS = 8;
const MARGIN = 2; // empty cells kept beyond the farthest token, so there is room to move
const MAX_CELL = 1000; // the `move_token` tool's bound
const RING = 17;
const RING_LENGTH = 2 * Math.PI * RING;
const UNDO_KEEP = 20;

const boot = JSON.parse(document.getElementById("table-data").textContent);
const movers = boot.map; // {gm: runs the table, user: this person's id}
const panel = document.getElementById("map");
const svg = panel.querySelector(".map-grid");
const statusLine = panel.querySelector(".map-status");
const errorLine = panel.querySelector(".map-error");
const undoButton = panel.querySelector(".map-undo");

let state = null;
let size = { cols: MIN_COLS, rows: MIN_ROWS };
let selected = null; // a creature id chosen with Enter/space or a tap, sent by a click on a cell
let drag = null;
const tokens = new Map(); // creature id -> its <g>
const shown = new Map(); // creature id -> "x,y" last drawn, to announce moves
const pending = new Map(); // creature id -> {x, y} sent, not yet in the state
const myMoves = []; // [{invocation, name}] newest last: what "Undo my move" reverts

function el(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  node.append(...children);
  return node;
}

const movable = (c) =>
  movers.gm || (c.kind === "pc" && c.controlled_by_id === movers.user);

function initials(name) {
  const words = name.split(/\s+/).filter(Boolean);
  return words
    .slice(0, 2)
    .map((word) => [...word][0].toUpperCase())
    .join("");
}

function activeCombatant() {
  const encounter = state.encounters.find((e) => e.id === state.campaign.active_encounter);
  return encounter?.order?.[encounter.turn_index]?.creature_id ?? null;
}

const revealed = () => new Set(state.fog.map((cell) => `${cell.x},${cell.y}`));

// Fog is in play once the GM has revealed a cell: until then the whole map is in view.
function fogged(cells, x, y) {
  return cells.size > 0 && !cells.has(`${x},${y}`);
}

const where = (c) => pending.get(c.id) ?? { x: c.x, y: c.y };

function gridSize() {
  const xs = [...state.creatures.map((c) => where(c).x), ...state.fog.map((f) => f.x)];
  const ys = [...state.creatures.map((c) => where(c).y), ...state.fog.map((f) => f.y)];
  return {
    cols: Math.min(MAX_CELL + 1, Math.max(MIN_COLS, ...xs.map((x) => x + 1 + MARGIN))),
    rows: Math.min(MAX_CELL + 1, Math.max(MIN_ROWS, ...ys.map((y) => y + 1 + MARGIN))),
  };
}

// ---- drawing -------------------------------------------------------------------------------

function drawGround() {
  const width = size.cols * CELL;
  const height = size.rows * CELL;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.style.setProperty("--cols", size.cols);
  const cells = revealed();
  const holes = [...cells].map((key) => {
    const [x, y] = key.split(",").map(Number);
    return el("rect", { x: x * CELL, y: y * CELL, width: CELL, height: CELL, fill: "black" });
  });
  const defs = el(
    "defs",
    {},
    el(
      "pattern",
      { id: "map-cells", width: CELL, height: CELL, patternUnits: "userSpaceOnUse" },
      el("path", { d: `M ${CELL} 0 L 0 0 0 ${CELL}`, class: "map-line" }),
    ),
    el(
      "mask",
      { id: "map-fog-mask" },
      el("rect", { width, height, fill: "white" }),
      ...holes,
    ),
  );
  const ground = el(
    "g",
    { class: "map-ground", "aria-hidden": "true" },
    el("rect", { class: "map-floor", width, height }),
    el("rect", { class: "map-lines", width, height, fill: "url(#map-cells)" }),
  );
  if (cells.size) {
    ground.append(el("rect", { class: "map-fog", width, height, mask: "url(#map-fog-mask)" }));
  }
  svg.querySelector(":scope > defs")?.remove();
  svg.querySelector(":scope > .map-ground")?.remove();
  svg.prepend(defs, ground);
}

function tokenLayer() {
  let layer = svg.querySelector(":scope > .map-tokens");
  if (!layer) {
    layer = el("g", { class: "map-tokens" });
    svg.append(layer);
  }
  return layer;
}

function newToken(c) {
  const token = el(
    "g",
    { class: "map-token", tabindex: "0", role: "button", "data-creature": c.id },
    el("circle", { class: "token-focus", cx: CELL / 2, cy: CELL / 2, r: 21 }),
    el("circle", { class: "token-halo", cx: CELL / 2, cy: CELL / 2, r: 20 }),
    el("circle", { class: "token-disc", cx: CELL / 2, cy: CELL / 2, r: 14 }),
    el("circle", { class: "token-track", cx: CELL / 2, cy: CELL / 2, r: RING }),
    el("circle", {
      class: "token-ring",
      cx: CELL / 2,
      cy: CELL / 2,
      r: RING,
      transform: `rotate(-90 ${CELL / 2} ${CELL / 2})`,
    }),
    el("text", { class: "token-initials", x: CELL / 2, y: CELL / 2 }),
  );
  token.addEventListener("keydown", onTokenKey);
  token.addEventListener("pointerdown", onPointerDown);
  return token;
}

function label(c, { x, y }, active, hidden) {
  const parts = [`${c.name} at ${x},${y}, HP ${c.hp} of ${c.max_hp}`];
  if (active) parts.push("acting now");
  if (c.kind === "pc" && c.controlled_by_id === movers.user) parts.push("your character");
  if (hidden) parts.push("hidden from the players by fog");
  return parts.join(", ");
}

function drawToken(c, cells, active) {
  const token = tokens.get(c.id) ?? newToken(c);
  tokens.set(c.id, token);
  const at = where(c);
  const inFog = fogged(cells, at.x, at.y) && c.kind !== "pc";
  const ratio = c.max_hp > 0 ? Math.min(1, Math.max(0, c.hp / c.max_hp)) : 0;
  const classes = ["map-token", `kind-${c.kind}`, `band-${hpBand(c)}`];
  if (movable(c)) classes.push("movable");
  if (c.id === active) classes.push("active");
  if (c.id === selected) classes.push("selected");
  if (inFog) classes.push("in-fog");
  if (drag?.id === c.id) classes.push("dragging");
  token.setAttribute("class", classes.join(" "));
  token.dataset.x = at.x;
  token.dataset.y = at.y;
  token.toggleAttribute("hidden", inFog && !movers.gm);
  token.setAttribute("aria-label", label(c, at, c.id === active, inFog && movers.gm));
  token.setAttribute("aria-disabled", String(!movable(c)));
  token.setAttribute("aria-pressed", String(c.id === selected));
  if (c.id === active) token.setAttribute("aria-current", "true");
  else token.removeAttribute("aria-current");
  token.querySelector(".token-ring").setAttribute(
    "stroke-dasharray",
    `${(ratio * RING_LENGTH).toFixed(2)} ${RING_LENGTH.toFixed(2)}`,
  );
  token.querySelector(".token-initials").textContent = initials(c.name);
  if (drag?.id !== c.id) place(token, at);
  return token;
}

function place(token, { x, y }) {
  token.style.transform = `translate(${x * CELL}px, ${y * CELL}px)`;
}

function announceMoves() {
  const moved = [];
  for (const c of state.creatures) {
    const now = `${c.x},${c.y}`;
    const before = shown.get(c.id);
    if (before !== undefined && before !== now && !pending.has(c.id)) {
      moved.push(`${c.name} moves to ${now}.`);
    }
    shown.set(c.id, now);
  }
  if (moved.length) statusLine.textContent = moved.join(" ");
}

function render(fresh) {
  state = fresh;
  // A move the server has answered is the state's business from then on: its event, or a
  // later one (an undo, someone else's move), says where the token is.
  for (const [id, cell] of pending) {
    if (cell.sent || !state.creatures.some((c) => c.id === id)) pending.delete(id);
  }
  size = gridSize();
  drawGround();
  const cells = revealed();
  const active = activeCombatant();
  const layer = tokenLayer();
  const ids = new Set(state.creatures.map((c) => c.id));
  for (const [id, token] of tokens) {
    if (!ids.has(id)) {
      token.remove();
      tokens.delete(id);
    }
  }
  if (selected !== null && !ids.has(selected)) selected = null;
  // Tokens keep their element (and so their focus and their transition) across redraws.
  for (const c of state.creatures) {
    const token = drawToken(c, cells, active);
    if (token.parentNode !== layer) layer.append(token);
  }
  announceMoves();
}

// ---- moving --------------------------------------------------------------------------------

const creature = (id) => state.creatures.find((c) => c.id === id);

function showError(text) {
  errorLine.hidden = !text;
  errorLine.textContent = text;
}

function refreshUndo() {
  const last = myMoves.at(-1);
  undoButton.hidden = !last;
  if (last) undoButton.textContent = `↶ Undo my move (${last.name})`;
}

async function move(id, x, y) {
  const c = creature(id);
  const from = where(c);
  if (!c || !movable(c) || (from.x === x && from.y === y)) return;
  if (x < 0 || y < 0 || x > MAX_CELL || y > MAX_CELL) return;
  showError("");
  pending.set(id, { x, y, sent: false });
  render(state);
  try {
    const response = await request("POST", `${API}/creatures/${id}/move/`, { x, y });
    if (!response.ok) throw new Error(await problem(response));
    const body = await response.json();
    myMoves.push({ invocation: body.invocation, name: `${c.name} to ${x},${y}` });
    myMoves.splice(0, myMoves.length - UNDO_KEEP);
    refreshUndo();
    const now = creature(id);
    if (now && now.x === x && now.y === y) pending.delete(id); // its event came first
    else if (pending.has(id)) pending.get(id).sent = true;
    statusLine.textContent = `${c.name} moves to ${x},${y}.`;
  } catch (error) {
    pending.delete(id);
    render(state);
    showError(error instanceof TypeError ? UNREACHABLE : error.message);
  }
}

undoButton.addEventListener("click", async () => {
  const last = myMoves.at(-1);
  if (!last) return;
  undoButton.disabled = true;
  showError("");
  try {
    const response = await request("POST", `${API}/invocations/${last.invocation}/revert/`, {});
    if (response.status === 409) {
      showError("Someone has moved it since: that move is in the way of this undo.");
    } else if (!response.ok) {
      showError(await problem(response));
    } else {
      myMoves.pop();
      const body = await response.json();
      if (!body.reverted) showError("That move was already undone.");
    }
  } catch {
    showError(UNREACHABLE);
  } finally {
    undoButton.disabled = false;
    refreshUndo();
  }
});

// ---- keyboard: focus a token, arrows move it a cell, Enter/space select it ------------------

const STEPS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

function select(id) {
  selected = selected === id ? null : id;
  render(state);
  const c = selected === null ? null : creature(selected);
  statusLine.textContent = c
    ? `${c.name} selected: click a cell to move there, or use the arrow keys.`
    : "No token selected.";
}

function onTokenKey(event) {
  const id = Number(event.currentTarget.dataset.creature);
  const c = creature(id);
  if (!c) return;
  if (event.key in STEPS) {
    event.preventDefault();
    if (!movable(c)) {
      showError(`Only ${c.kind === "pc" ? "its player" : "the GM"} can move ${c.name}.`);
      return;
    }
    const [dx, dy] = STEPS[event.key];
    const at = where(c);
    move(id, at.x + dx, at.y + dy);
  } else if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    if (movable(c)) select(id);
  } else if (event.key === "Escape" && selected !== null) {
    select(selected);
  }
}

// ---- pointer: drag a token (mouse, pen or finger), or tap a cell for the selected token ------

function cellAt(event) {
  const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(
    svg.getScreenCTM().inverse(),
  );
  return {
    x: Math.min(size.cols - 1, Math.max(0, Math.floor(point.x / CELL))),
    y: Math.min(size.rows - 1, Math.max(0, Math.floor(point.y / CELL))),
    point,
  };
}

function onPointerDown(event) {
  const token = event.currentTarget;
  const id = Number(token.dataset.creature);
  const c = creature(id);
  if (!c || !movable(c) || event.button !== 0) return;
  event.preventDefault();
  token.focus();
  token.setPointerCapture(event.pointerId);
  const { point } = cellAt(event);
  const at = where(c);
  drag = { id, token, dx: point.x - at.x * CELL, dy: point.y - at.y * CELL, moved: false };
  drag.start = { x: event.clientX, y: event.clientY };
  token.classList.add("dragging");
  token.addEventListener("pointermove", onPointerMove);
  token.addEventListener("pointerup", onPointerUp);
  token.addEventListener("pointercancel", onPointerUp);
}

function onPointerMove(event) {
  if (!drag) return;
  const distance = Math.hypot(event.clientX - drag.start.x, event.clientY - drag.start.y);
  if (distance > 4) drag.moved = true;
  const { point } = cellAt(event);
  drag.token.style.transform = `translate(${point.x - drag.dx}px, ${point.y - drag.dy}px)`;
}

function onPointerUp(event) {
  if (!drag) return;
  const { id, token, moved, dx, dy } = drag;
  drag = null;
  token.classList.remove("dragging");
  token.removeEventListener("pointermove", onPointerMove);
  token.removeEventListener("pointerup", onPointerUp);
  token.removeEventListener("pointercancel", onPointerUp);
  const c = creature(id);
  if (!c) return;
  if (event.type === "pointercancel" || !moved) {
    place(token, where(c));
    if (event.type === "pointerup") select(id); // a tap selects, as Enter does
    return;
  }
  // The cell under the token's centre, not under the finger that may hold it off-centre.
  const { point } = cellAt(event);
  const centre = { x: point.x - dx + CELL / 2, y: point.y - dy + CELL / 2 };
  const x = Math.min(size.cols - 1, Math.max(0, Math.floor(centre.x / CELL)));
  const y = Math.min(size.rows - 1, Math.max(0, Math.floor(centre.y / CELL)));
  place(token, where(c));
  move(id, x, y);
}

svg.addEventListener("click", (event) => {
  if (selected === null || event.target.closest(".map-token")) return;
  const { x, y } = cellAt(event);
  const id = selected;
  selected = null;
  move(id, x, y);
});

onBoard(render);
