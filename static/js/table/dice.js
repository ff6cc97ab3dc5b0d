// Dice from the campaign page (docs/api.md#dice): a roll goes through the REST API, like everything that
// changes the table, and is drawn in the feed by the server's own fragment (feed.js, on its
// `dice_rolled` event, and sent down the socket); the roller holds its place as soon as the API
// answers, and fetches it when their socket is down.

import { $, API, UNREACHABLE, problem, request, show } from "./http.js";
import { drawRoll } from "./feed.js";
import { offline } from "./socket.js";

const form = $("#dice");
const error = $(".dice-error", form);

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const formula = form.elements.formula.value.trim();
  if (!formula) return;
  const button = $("button[type=submit]", form);
  button.disabled = true;
  show(error, false);
  try {
    const response = await request("POST", `${API}/rolls/`, {
      formula,
      mode: form.elements.mode.value,
    });
    if (response.ok) drawRoll((await response.json()).id, null, null, { fetchIt: offline() });
    else show(error, true, await problem(response));
  } catch {
    show(error, true, UNREACHABLE);
  } finally {
    button.disabled = false;
  }
});
