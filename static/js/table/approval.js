// The approval card (docs/architecture.md#human-in-the-loop): the calls waiting for a person, drawn by the server for whoever
// looks (the diff, Approve/Reject for those who may, Object for a player whose character a call
// would change, a waiting note for the rest). The server sends it down the socket whenever a
// call is held or answered (socket.js, `approvalSent`), so it appears and disappears live for
// everyone; the page fetches it (`/approvals/`) on load, after a resync, after an answer the API
// refused, and when the server could not draw it. The card carries the number of the last event
// it reflects, so an older drawing never replaces a newer one. The buttons post to the REST API
// with the session's CSRF token.

import { on } from "./bus.js";
import { API, PAGE, fetchHTML, fragment, problem, request, UNREACHABLE } from "./http.js";

const slot = document.getElementById("approvals");
let shownSeq = -1;

function show(drawn) {
  const seq = Number(drawn.dataset.seq);
  if (seq < shownSeq) return;
  shownSeq = seq;
  slot.replaceChildren(drawn);
  slot.hidden = drawn.dataset.count === "0";
}

async function redraw() {
  try {
    show(await fetchHTML(`${PAGE}/approvals/`));
  } catch {
    // the next event, or a reload, draws it
  }
}

// The card the server sent after a call was held or answered; null: it could not draw it.
export function approvalSent(html) {
  if (html === null) redraw();
  else show(fragment(html).firstElementChild);
}

// After a lost event or a reconnection the page catches up from the server: so does the card.
on("resynced", redraw);

slot.addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  // Approve, reject (withdraw) or, for the affected player, object (with a reason).
  const asked = event.submitter?.value;
  const action = asked === "approve" || asked === "object" ? asked : "reject";
  const error = form.querySelector(".approval-error");
  const body = action === "approve" ? {} : { reason: form.elements.reason.value };
  for (const button of form.querySelectorAll("button")) button.disabled = true;
  error.hidden = true;
  try {
    const response = await request("POST", `${API}/invocations/${form.dataset.invocation}/${action}/`, body);
    if (!response.ok) {
      const text = await problem(response);
      await redraw(); // a stale preview comes back fresh; an answered call goes
      const again = slot.querySelector(`form.${form.classList.contains("objection") ? "objection" : "approval-answer:not(.objection)"}[data-invocation="${form.dataset.invocation}"] .approval-error`);
      if (again) {
        again.textContent = text;
        again.hidden = false;
      }
      return;
    }
    await redraw();
  } catch {
    error.textContent = UNREACHABLE;
    error.hidden = false;
    for (const button of form.querySelectorAll("button")) button.disabled = false;
  }
});

redraw();
