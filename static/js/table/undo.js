// The undo dialog. The server draws the plan (each change in plain words, before → after, the
// later changes in the way) as a fragment; this module swaps it in, and confirms through the
// API. A refusal shows its message alone: no plan, no reason box, no button that cannot work.

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

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.undo, button.undo-from");
  if (button?.dataset.undo) openUndo(Number(button.dataset.undo));
  else if (button?.dataset.undoFrom) openUndo(Number(button.dataset.undoFrom), true);
});
