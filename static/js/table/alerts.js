// The approvers' alert (docs/architecture.md#human-in-the-loop): while a call waits for this
// person — a card the server drew with Approve for them, or Object for the player of the
// character it would change — the page's title and its top bar carry the count, a banner is
// pinned to the top of a phone's screen, and, if this browser's notifications are granted, a
// new one raises a notification. It reads the card the server drew (approval.js swaps it in);
// it decides nothing: who may answer is the server's drawing.

import { $ } from "./http.js";

const slot = document.getElementById("approvals");
const badge = document.getElementById("approval-badge");
const banner = document.getElementById("approval-banner");
const notify = banner ? $(".approval-notify", banner) : null;
const title = document.title;
const told = new Set(); // the held calls a notification was raised for
const canNotify = "Notification" in window;

// The cards asking this person: they may approve it, or object to it.
const asking = () =>
  [...slot.querySelectorAll(".approval-card")].filter((card) =>
    card.querySelector('button[value="approve"], button[value="object"]'),
  );

function draw() {
  const cards = asking();
  const n = cards.length;
  document.title = n ? `(${n}) ${title}` : title;
  badge.hidden = banner.hidden = n === 0;
  document.body.classList.toggle("approval-alerted", n > 0);
  if (n && banner.offsetHeight) {
    document.documentElement.style.setProperty("--approval-banner-height", `${banner.offsetHeight}px`);
  }
  $(".approval-count", badge).textContent = String(n);
  $(".approval-banner-text", banner).textContent =
    n === 1 ? "A call waits for your answer" : `${n} calls wait for your answer`;
  notify.hidden = !(n && canNotify && Notification.permission === "default");
  for (const card of cards) card.classList.add("asked");
  if (!canNotify || Notification.permission !== "granted") return;
  for (const card of cards) {
    const id = card.dataset.invocation;
    if (told.has(id)) continue;
    told.add(id);
    const heading = card.querySelector("h3")?.textContent ?? "A call waits for your answer";
    const note = new Notification("A call waits for your answer", { body: heading, tag: id });
    note.onclick = () => {
      window.focus();
      show();
    };
  }
}

// One tap brings the card (and its first answer) into view.
function show() {
  const card = asking()[0];
  if (!card) return;
  card.scrollIntoView({ block: "center" });
  card.querySelector("input, button")?.focus({ preventScroll: true });
}

if (slot && badge && banner) {
  new MutationObserver(draw).observe(slot, { childList: true, subtree: true });
  for (const link of [badge, $(".approval-banner-link", banner)]) {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      show();
    });
  }
  notify.addEventListener("click", async () => {
    await Notification.requestPermission();
    draw();
  });
  draw();
}
