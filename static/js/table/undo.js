// The undo dialog, for an undo, an undo of what depends on a turn, and a rewind. The server
// draws the plan (each change in plain words, before → after, the later changes in the way, or
// the turns a rewind takes) as a fragment; this module swaps it in, and confirms through the
// API. A refusal shows its message alone: no plan, no reason box, no button that cannot work.
// Redo needs no dialog: it puts back what the feed still shows; a refusal shows by the turn.

import { refreshTurn } from "./feed.js";
import { $, API, PAGE, UNREACHABLE, fragment, problem, request, show } from "./http.js";
import { offline, resync } from "./socket.js";

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

function refused(text) {
  undoStatus("");
  undoError(text);
  $(".undo-plan", dialog).hidden = true;
  $(".reason", dialog).hidden = true;
  confirmButton.hidden = true;
  keepButton.textContent = "Close";
}

function openUndo(turnId, cascade = false, rewind = false) {
  undoing = { turn: turnId, cascade, rewind };
  $(".undo-plan", dialog).replaceChildren();
  $(".undo-plan", dialog).hidden = false;
  $(".reason", dialog).hidden = false;
  confirmButton.hidden = false;
  confirmButton.disabled = true;
  confirmButton.textContent = rewind
    ? "Rewind"
    : cascade
      ? "Undo this and what depends on it"
      : "Undo turn";
  keepButton.textContent = rewind ? "Keep the table as it is" : "Keep the turn";
  undoForm.elements.reason.value = "";
  undoError("");
  undoStatus(rewind ? "Working out what this rewind changes…" : "Working out what this undo changes…");
  dialog.showModal();
  loadPlan();
}

async function loadPlan() {
  const { turn, cascade, rewind } = undoing;
  const url = rewind
    ? `${PAGE}/rewind-plan/?turn=${turn}`
    : `${PAGE}/undo-plan/?turn=${turn}${cascade ? "&cascade=1" : ""}`;
  let response;
  try {
    response = await fetch(url, {
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
  undoForm.elements.cascade?.addEventListener("change", (event) => {
    undoing.cascade = event.target.checked;
    confirmButton.disabled = true;
    undoStatus("Working out what this undo changes…");
    loadPlan();
  });
}

undoForm.addEventListener("submit", async (event) => {
  if (event.submitter?.value !== "confirm") return; // "Keep the turn" just closes the dialog
  event.preventDefault();
  const { turn, cascade, rewind } = undoing;
  confirmButton.disabled = true;
  undoError("");
  undoStatus(rewind ? "Rewinding…" : "Undoing…");
  const reason = undoForm.elements.reason.value.trim();
  try {
    const response = rewind
      ? await request("POST", `${API}/turns/${turn}/rewind/`, { reason })
      : await request("POST", `${API}/turns/${turn}/undo/`, { reason, cascade });
    if (response.ok) {
      const result = await response.json();
      if (offline()) resync();
      // A call that never changed the table (failed, refused, or the held row of an approved
      // call, which ran as a row of its own) is skipped as `not_committed`: nothing was kept.
      const kept = (result.skipped ?? []).filter((s) => s.skip_reason !== "not_committed");
      if (!kept.length) {
        dialog.close();
        return;
      }
      undoStatus(`Undone, except ${kept.length} change(s) that could not be reverted.`);
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

async function redo(button) {
  const turnId = Number(button.dataset.redo);
  const error = $(":scope > .redo-error", button.closest(".turn"));
  button.disabled = true;
  show(error, false);
  try {
    const response = await request("POST", `${API}/turns/${turnId}/redo/`, {});
    if (!response.ok) {
      show(error, true, await problem(response));
      button.disabled = false;
      return;
    }
    if (offline()) resync();
  } catch {
    show(error, true, UNREACHABLE);
    button.disabled = false;
    return;
  }
  refreshTurn(turnId);
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.undo, button.undo-from, button.rewind, button.redo");
  if (button?.dataset.undo) openUndo(Number(button.dataset.undo));
  else if (button?.dataset.undoFrom) openUndo(Number(button.dataset.undoFrom), true);
  else if (button?.dataset.rewind) openUndo(Number(button.dataset.rewind), false, true);
  else if (button?.dataset.redo) redo(button);
});
