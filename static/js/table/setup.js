// Set-up and the GM's hand on the campaign page (docs/architecture.md#set-up-and-the-gms-hand). The forms work without this script
// (a normal POST, then the page again); with it they post in the background and stay put. What
// they change reaches every open page, this one included, as events, and the board (with the
// forms' choices and the member list) is drawn again by the server (board.js).

import { onPart } from "./board.js";
import { $, UNREACHABLE, csrfToken, problem, show } from "./http.js";

function showError(form, text) {
  const error = $(".form-error", form);
  if (error) show(error, Boolean(text), text);
}

// A new invite link exists only in this answer (the server keeps its hash): shown once, here,
// with a button that copies it.
function showInvite(form, url) {
  const shown = $(".invite-new", form.parentElement);
  $(".invite-url", shown).value = url;
  $(".invite-copied", shown).textContent = "";
  shown.hidden = false;
}

document.addEventListener("click", async (event) => {
  const button = event.target.closest(".invite-copy");
  if (!button) return;
  const shown = button.closest(".invite-new");
  const field = $(".invite-url", shown);
  let said = "Copied: paste it to your friends.";
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    field.select(); // no clipboard access (an insecure origin): the link is selected to copy
    said = document.execCommand("copy") ? said : "Selected: press Ctrl+C (⌘C) to copy it.";
  }
  $(".invite-copied", shown).textContent = said;
});

async function submit(form, submitter) {
  showError(form, "");
  if (submitter) submitter.disabled = true;
  try {
    const response = await fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrfToken },
    });
    if (!response.ok) {
      showError(form, await problem(response));
      return;
    }
    // The invite form keeps its choices (how long, how many) for the next link.
    if (form.dataset.form !== "invites") form.reset();
    const body = await response.json();
    if (body.invite_url) showInvite(form, body.invite_url);
  } catch {
    showError(form, UNREACHABLE);
  } finally {
    if (submitter) submitter.disabled = false;
  }
}

// Listened to on the document: the combat tracker's GM buttons come and go with each redraw.
document.addEventListener("submit", (event) => {
  const form = event.target.closest("form.setup-form");
  if (!form) return;
  event.preventDefault();
  submit(form, event.submitter);
});

// "Your character": the list of this person's characters is a board part; once they have one,
// the form gives way to it, folded under "Make another character" (an explicit choice), its
// button saying which (both words are the server's).
onPart("character", (old, fresh) => {
  const [before, now] = [Number(old.dataset.mine), Number(fresh.dataset.mine)];
  old.replaceWith(fresh);
  if (before === now) return;
  const details = $("#character .character-new");
  if (!details) return;
  if (before === 0) details.open = false;
  const button = $("button[type=submit]", details);
  button.textContent = now ? button.dataset.more : button.dataset.first;
});
