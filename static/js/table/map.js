// The battle map's hands (docs/architecture.md, "The battle map"). The map itself is drawn by the server
// (`_map_grid.html`: the grid, fog, a token per creature with its HP ring, the active
// combatant, and whether this person may drag it, by the API's own rule); this module swaps
// fresh drawings into the same tokens, so focus, a drag in progress and the glide of a move
// survive, and turns drags, taps and arrow keys into moves.
//
// A move is `POST /api/campaigns/{id}/creatures/{cid}/move/` (the `move_token` tool through the
// audited dispatch, source `user`); every page sees it when its `state_changed` event brings a
// fresh board, and the mover may undo it (the invocation's revert) the same way.

import { onPart } from "./board.js";
import { $, $$, API, UNREACHABLE, problem, request } from "./http.js";

const UNDO_KEEP = 20;
const panel = $("#map");
const svg = $(".map-grid", panel);
const statusLine = $(".map-status", panel);
const errorLine = $(".map-error", panel);
const undoButton = $(".map-undo", panel);
const picker = $(".map-picker", panel);

let selected = null; // a creature id chosen with Enter/space or a tap, sent by a click on a cell
let drag = null;
const pending = new Map(); // creature id -> {x, y, sent}: a move on its way to the server
const myMoves = []; // [{invocation, name}] newest last: what "Undo my move" reverts

const cell = () => Number(svg.dataset.cell);
const tokens = (root = svg) => $$(":scope > .map-tokens > .map-token", root);
const tokenOf = (id) => $(`:scope > .map-tokens > [data-creature="${id}"]`, svg);
const movable = (token) => token.getAttribute("aria-disabled") === "false";
const at = (token) => ({ x: Number(token.dataset.x), y: Number(token.dataset.y) });

function place(token, { x, y }) {
  token.dataset.x = x;
  token.dataset.y = y;
  token.style.transform = `translate(${x * cell()}px, ${y * cell()}px)`;
}

// What this page adds to the server's drawing: the selection, a drag, a move on its way.
function decorate(token) {
  const id = token.dataset.creature;
  token.classList.toggle("selected", id === selected);
  token.setAttribute("aria-pressed", String(id === selected));
  token.classList.toggle("dragging", drag?.id === id);
  if (pending.has(id)) place(token, pending.get(id));
}

function morph(old, fresh) {
  for (const { name } of [...old.attributes]) {
    if (!fresh.hasAttribute(name)) old.removeAttribute(name);
  }
  for (const { name, value } of [...fresh.attributes]) {
    if (old.getAttribute(name) !== value) old.setAttribute(name, value);
  }
  const [before, after] = [[...old.children], [...fresh.children]];
  if (before.length !== after.length) {
    old.replaceChildren(...after);
    return;
  }
  before.forEach((child, index) => morph(child, after[index]));
  if (!after.length && old.textContent !== fresh.textContent) old.textContent = fresh.textContent;
}

function swapMap(old, fresh) {
  const dragged = drag && tokenOf(drag.id)?.style.transform;
  for (const name of ["viewBox", "style", "data-cols", "data-rows", "data-cell"]) {
    old.setAttribute(name, fresh.getAttribute(name));
  }
  $(":scope > defs", old).replaceWith($(":scope > defs", fresh));
  $(":scope > .map-ground", old).replaceWith($(":scope > .map-ground", fresh));
  const layer = $(":scope > .map-tokens", old);
  const ids = new Set(tokens(fresh).map((token) => token.dataset.creature));
  for (const [id, move] of pending) if (move.sent || !ids.has(id)) pending.delete(id);
  if (selected !== null && !ids.has(selected)) selected = null;
  for (const token of tokens(old)) if (!ids.has(token.dataset.creature)) token.remove();
  const moved = [];
  for (const token of tokens(fresh)) {
    const was = tokenOf(token.dataset.creature);
    const { x, y, name } = token.dataset;
    if (was && !pending.has(token.dataset.creature) && (was.dataset.x !== x || was.dataset.y !== y)) {
      moved.push(`${name} moves to ${x},${y}.`);
    }
    if (was) morph(was, token);
    else layer.append(token);
    decorate(was ?? token);
  }
  if (dragged) tokenOf(drag.id).style.transform = dragged;
  if (moved.length) statusLine.textContent = moved.join(" ");
}

onPart("map", swapMap);

// ---- moving --------------------------------------------------------------------------------

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
  const token = tokenOf(id);
  const from = token && at(token);
  if (!token || !movable(token) || (from.x === x && from.y === y)) return;
  if (x < 0 || y < 0) return;
  const { name } = token.dataset;
  showError("");
  pending.set(id, { x, y, sent: false });
  decorate(token);
  try {
    const response = await request("POST", `${API}/creatures/${id}/move/`, { x, y });
    if (!response.ok) throw new Error(await problem(response));
    const body = await response.json();
    myMoves.push({ invocation: body.invocation, name: `${name} to ${x},${y}` });
    myMoves.splice(0, myMoves.length - UNDO_KEEP);
    refreshUndo();
    if (pending.has(id)) pending.get(id).sent = true; // the next drawing says where it is
    statusLine.textContent = `${name} moves to ${x},${y}.`;
  } catch (error) {
    pending.delete(id);
    if (tokenOf(id)) place(tokenOf(id), from);
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
      if (!body.reverted) showError("That move had been undone before.");
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
  tokens().forEach(decorate);
  const token = selected === null ? null : tokenOf(selected);
  statusLine.textContent = token
    ? `${token.dataset.name} selected: click a cell to move there, or use the arrow keys.`
    : "No token selected.";
}

svg.addEventListener("keydown", (event) => {
  const token = event.target.closest(".map-token");
  if (!token) return;
  const id = token.dataset.creature;
  if (event.key in STEPS) {
    event.preventDefault();
    if (!movable(token)) {
      showError(token.dataset.refusal);
      return;
    }
    const [dx, dy] = STEPS[event.key];
    const { x, y } = at(token);
    move(id, x + dx, y + dy);
  } else if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    if (Number(token.dataset.stack) > 1) openPicker(token);
    else if (movable(token)) select(id);
    else showError(token.dataset.refusal);
  } else if (event.key === "Escape" && selected !== null) {
    select(selected);
  }
});

// ---- pointer: drag a token (mouse, pen or finger), or tap a cell for the selected token ------

function cellAt(event) {
  const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(
    svg.getScreenCTM().inverse(),
  );
  const [cols, rows] = [Number(svg.dataset.cols), Number(svg.dataset.rows)];
  return {
    x: Math.min(cols - 1, Math.max(0, Math.floor(point.x / cell()))),
    y: Math.min(rows - 1, Math.max(0, Math.floor(point.y / cell()))),
    point,
  };
}

// ---- a stack: tokens sharing a cell (the server counts them, `data-stack`, and draws each
// stack's choices, `_map_stacks.html`). Pressing one shows them, so the one underneath can be
// taken too.

function closePicker() {
  picker.hidden = true;
  $(".map-picker-shown", picker).replaceChildren();
}

function openPicker(token) {
  const { x, y } = at(token);
  const stack = $(`.map-stacks > [data-cell="${x},${y}"]`);
  if (!stack) return;
  $(".map-picker-shown", picker).replaceChildren(stack.cloneNode(true));
  picker.hidden = false;
  $("button[data-creature]", picker)?.focus();
}

picker.addEventListener("click", (event) => {
  if (event.target.closest(".map-picker-close")) {
    closePicker();
    return;
  }
  const button = event.target.closest("button[data-creature]");
  if (!button) return;
  const token = tokenOf(button.dataset.creature);
  closePicker();
  if (!token) return;
  if (!movable(token)) {
    showError(token.dataset.refusal);
    return;
  }
  showError("");
  if (selected !== token.dataset.creature) select(token.dataset.creature);
  token.focus();
});

picker.addEventListener("keydown", (event) => {
  if (event.key === "Escape") closePicker();
});

svg.addEventListener("pointerdown", (event) => {
  const token = event.target.closest(".map-token");
  if (!token || event.button !== 0) return;
  if (Number(token.dataset.stack) > 1) {
    event.preventDefault();
    openPicker(token);
    return;
  }
  if (!movable(token)) {
    showError(token.dataset.refusal); // a refused drag says why, before it starts
    return;
  }
  event.preventDefault();
  token.focus();
  token.setPointerCapture(event.pointerId);
  const { point } = cellAt(event);
  const from = at(token);
  drag = {
    id: token.dataset.creature,
    dx: point.x - from.x * cell(),
    dy: point.y - from.y * cell(),
    moved: false,
    start: { x: event.clientX, y: event.clientY },
  };
  token.classList.add("dragging");
});

svg.addEventListener("pointermove", (event) => {
  if (!drag) return;
  const distance = Math.hypot(event.clientX - drag.start.x, event.clientY - drag.start.y);
  if (distance > 4) drag.moved = true;
  const { point } = cellAt(event);
  tokenOf(drag.id).style.transform = `translate(${point.x - drag.dx}px, ${point.y - drag.dy}px)`;
});

function endDrag(event) {
  if (!drag) return;
  const { id, moved, dx, dy } = drag;
  drag = null;
  const token = tokenOf(id);
  if (!token) return;
  token.classList.remove("dragging");
  place(token, at(token));
  if (event.type === "pointercancel" || !moved) {
    if (event.type === "pointerup") select(id); // a tap selects, as Enter does
    return;
  }
  // The cell under the token's centre, not under the finger that may hold it off-centre.
  const { point } = cellAt(event);
  const half = cell() / 2;
  const [cols, rows] = [Number(svg.dataset.cols), Number(svg.dataset.rows)];
  const x = Math.min(cols - 1, Math.max(0, Math.floor((point.x - dx + half) / cell())));
  const y = Math.min(rows - 1, Math.max(0, Math.floor((point.y - dy + half) / cell())));
  move(id, x, y);
}

svg.addEventListener("pointerup", endDrag);
svg.addEventListener("pointercancel", endDrag);

svg.addEventListener("click", (event) => {
  if (selected === null || event.target.closest(".map-token")) return;
  const { x, y } = cellAt(event);
  const id = selected;
  selected = null;
  tokens().forEach(decorate);
  move(id, x, y);
});
