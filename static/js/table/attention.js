// The attention chip (docs/architecture.md#the-campaign-page-one-renderer-the-server): when a
// reply, someone's message or a call waiting for approval lands where this person cannot see it
// (on a phone the chat sits below the board), a chip at the bottom of the screen says so, and
// one tap brings it into view and focus. Its words are the server's (`data-*` of `#attention`);
// the call waiting for approval wins over a reply.

import { on } from "./bus.js";
import { $, boot } from "./http.js";
import { feed, turnNode } from "./feed.js";

const chip = $("#attention");
let wanted = null; // {kind, find: () => Element | null}

function onScreen(element) {
  const box = element.getBoundingClientRect();
  if (!box.height) return false;
  const composer = $("#say")?.getBoundingClientRect();
  const bottom = composer && composer.top > 0 ? Math.min(innerHeight, composer.top) : innerHeight;
  if (box.top >= bottom || box.bottom <= 0) return false;
  const list = feed();
  if (!list.contains(element)) return true;
  const frame = list.getBoundingClientRect();
  return box.top < frame.bottom && box.bottom > frame.top;
}

function check() {
  if (!wanted) return;
  const target = wanted.find();
  if (!target) return; // not drawn yet: the next change looks again
  if (onScreen(target)) {
    wanted = null;
    chip.hidden = true;
    return;
  }
  chip.textContent = chip.dataset[wanted.kind];
  chip.dataset.kind = wanted.kind;
  chip.hidden = false;
}

function want(kind, find) {
  if (wanted?.kind === "approval" && kind !== "approval") return;
  wanted = { kind, find };
  check();
}

const waitingCard = () => {
  const slot = $("#approvals");
  return slot && !slot.hidden ? slot.querySelector(".approval-card") ?? slot : null;
};
const newest = (turnId) => () => turnNode(turnId);

on("gm_turn_completed", ({ turn }) => want("reply", newest(turn)));
on("message_created", ({ turn, data }) => {
  if (data.role === "player" && data.author !== boot.me) want("message", newest(turn));
});
on("approval_requested", () => want("approval", waitingCard));

chip.addEventListener("click", () => {
  const target = wanted?.find();
  wanted = null;
  chip.hidden = true;
  if (!target) return;
  target.scrollIntoView({ block: "center", behavior: "instant" });
  if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
  target.focus({ preventScroll: true });
});

// What is drawn arrives after its event, and scrolling may bring it into view.
new MutationObserver(check).observe($("#chat"), { childList: true, subtree: true, attributes: true, attributeFilter: ["hidden"] });
addEventListener("scroll", check, { passive: true });
document.addEventListener("scroll", check, { passive: true, capture: true });
