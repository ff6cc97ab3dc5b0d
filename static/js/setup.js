// Set-up and the GM's hand on the campaign page (SPEC §8). The forms work without this script
// (a normal POST, then the page again); with it they post in the background and stay put. What
// they change reaches every open page, this one included, as events: the board redraws itself
// from them (table.js), and this module keeps the forms' choices (creatures, chapters,
// dungeons, members) in step with the same copy of the state.

import { csrfToken, currentState, onBoard, onEvent, people, problem, renderBoard, UNREACHABLE } from "./table.js";

function showError(form, text) {
  const error = form.querySelector(".form-error");
  if (!error) return;
  error.hidden = !text;
  error.textContent = text;
}

// A new invite link exists only in this answer (the server keeps its hash): shown once, here.
function showInvite(form, url) {
  const shown = form.parentElement.querySelector(".invite-new");
  shown.querySelector(".invite-url").value = url;
  shown.hidden = false;
}

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
    form.reset();
    const body = await response.json();
    if (body.invite_url) showInvite(form, body.invite_url);
  } catch {
    showError(form, UNREACHABLE);
  } finally {
    if (submitter) submitter.disabled = false;
  }
}

for (const form of document.querySelectorAll("form.setup-form")) {
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    submit(form, e.submitter);
  });
}

// ---- the forms' choices, from the state ------------------------------------------------------

const OPTIONS = {
  creatures: (state) => state.creatures.map((c) => [c.id, c.name]),
  chapters: (state) => state.chapters.map((c) => [c.id, `${c.position}. ${c.title}`]),
  dungeons: (state) => state.dungeons.map((d) => [d.id, d.name]),
  members: () => [["", "nobody"], ...Object.values(people).sort().map((name) => [name, name])],
};

function refill(select, options) {
  const chosen = select.value;
  select.replaceChildren(
    ...options.map(([value, label]) => {
      const option = document.createElement("option");
      option.value = String(value);
      option.textContent = label;
      return option;
    }),
  );
  if (options.some(([value]) => String(value) === chosen)) select.value = chosen;
}

function refillAll(state) {
  for (const select of document.querySelectorAll("select[data-options]")) {
    refill(select, OPTIONS[select.dataset.options](state));
  }
}

onBoard(refillAll);

// A new member: named on the board (their characters' cards) and offered in the forms.
onEvent("member_added", ({ data }) => {
  people[data.user_id] = data.username;
  const members = currentState().members;
  const index = members.findIndex((m) => m.user_id === data.user_id);
  const row = { user_id: data.user_id, role: data.role };
  if (index >= 0) members[index] = row;
  else members.push(row);
  const list = document.querySelector("#setup .member-list");
  if (list && index < 0) {
    const item = document.createElement("li");
    item.textContent = data.username;
    list.append(item);
  }
  renderBoard();
});
