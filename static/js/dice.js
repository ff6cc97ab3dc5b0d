// Dice from the campaign page (SPEC §8): a roll goes through the REST API, like everything that
// changes the table, and is drawn in the feed by the server's own fragment (`/feed/?roll=`), the
// same live as after a reload. Everyone sees it when its `dice_rolled` event arrives; the roller
// also as soon as the API answers, in case their socket is down.

import {
  API,
  PAGE,
  addToTurn,
  feed,
  fetchHTML,
  keepingScroll,
  onEvent,
  problem,
  request,
  turnBlock,
  UNREACHABLE,
} from "./table.js";

const form = document.getElementById("dice");
const error = form.querySelector(".dice-error");

function showError(text) {
  error.hidden = !text;
  error.textContent = text;
}

// A hidden slot takes the roll's place in the feed at once and is filled when the fragment
// arrives, so rolls stay in the order they were announced however their fetches finish. A GM's
// roll goes inside its turn; a player's is an entry of its own.
async function draw(rollId, turnId) {
  if (feed().querySelector(`[data-roll="${rollId}"]`)) return;
  const inTurn = turnId !== null && turnId !== undefined;
  const slot = document.createElement(inTurn ? "div" : "li");
  slot.dataset.roll = rollId;
  slot.hidden = true;
  keepingScroll(() => (inTurn ? addToTurn(turnBlock(turnId), slot) : feed().append(slot)));
  try {
    const drawn = await fetchHTML(`${PAGE}/feed/?roll=${rollId}`);
    keepingScroll(() => slot.replaceWith(drawn));
  } catch {
    slot.remove(); // the next reload of the feed brings it
  }
}

onEvent("dice_rolled", ({ turn, data }) => draw(data.id, turn));

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const formula = form.elements.formula.value.trim();
  if (!formula) return;
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  showError("");
  try {
    const response = await request("POST", `${API}/rolls/`, {
      formula,
      mode: form.elements.mode.value,
    });
    if (response.ok) await draw((await response.json()).id, null);
    else showError(await problem(response));
  } catch {
    showError(UNREACHABLE);
  } finally {
    button.disabled = false;
  }
});
