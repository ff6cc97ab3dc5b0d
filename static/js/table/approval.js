// The approval card (docs/architecture.md#human-in-the-loop): the calls waiting for a person, drawn by the server for whoever
// looks (`/approvals/`: the diff, Approve/Reject for those who may, a waiting note for the
// rest). It is fetched on load and again whenever a call is held or answered, so it appears and
// disappears live for everyone; the buttons post to the REST API with the session's CSRF token.

import { on } from "./bus.js";
import { API, PAGE, fetchHTML, problem, request, UNREACHABLE } from "./http.js";

const slot = document.getElementById("approvals");

async function redraw() {
  try {
    const drawn = await fetchHTML(`${PAGE}/approvals/`);
    slot.replaceChildren(drawn);
    slot.hidden = drawn.dataset.count === "0";
  } catch {
    // the next event, or a reload, draws it
  }
}

on("approval_requested", redraw);
on("approval_resolved", redraw);
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
