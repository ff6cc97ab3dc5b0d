// The message box, and the Stop and Retry buttons the server draws on a turn for those it lets
// use them. Everything goes through the REST API; what it changes comes back as events.

import { $, API, UNREACHABLE, problem, request, show } from "./http.js";
import { feed, refreshTurn } from "./feed.js";
import { offline, resync } from "./socket.js";

const say = $("#say");

export function sayError(text) {
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
  const button = event.target.closest("button.stop, button.retry");
  if (!button) return;
  if (button.dataset.stop) turnAction(button, Number(button.dataset.stop), "cancel");
  else turnAction(button, Number(button.dataset.retry), "retry");
});
