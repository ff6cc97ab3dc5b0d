"""The offline GM: deterministic, reads plain table talk, calls the real tools.

It is the default so the product runs with no API key and tests can rely on it: the same turn
always rolls the same dice (seeded from the turn id). It understands what players type at a
table — "I attack the goblin", "we take a long rest", "move me to 3,4", "roll initiative", "end
combat", "next chapter", "end the adventure" — acts on each in the order they were said, and
answers anything else with a hint of what it understands.

It plays in rounds as a model does: each tool call ends a round (the narration since the last
one, then the call, named `scripted-<n>`), and a last round closes the turn. Every attempt at a
turn decides from the state the turn began with and gets the outcomes its calls had, so a turn
resumed after a crash says and does exactly what the first attempt did, each call applied once.
`GM_SCRIPTED_DELAY` makes each new round wait as long as a model would think, and
`GM_SCRIPTED_WORD_DELAY` makes it say its narration a word at a time, as a model streams.
"""

import random
import re
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from ai_tools.tools.read import roll
from gm.base import GMProvider, Round, Session

MODEL = "scripted/1"
DAMAGE = "1d8+2"
HINT = (
    'The GM listens. (This table runs the scripted GM: try "I attack the goblin", "we take '
    'a long rest", "move me to 3,4", "roll initiative", "end combat", "next chapter" or "end '
    'the adventure".)'
)

ATTACK = re.compile(r"\b(?:attack|hit|strike|stab|shoot|slash|smite|punch)(?:e?s)?\b")
MOVE = re.compile(
    r"\b(?:move (?P<who>me|myself|[a-z][\w' -]*?)|(?:i|we) (?:move|go|walk|run|step))"
    r" to \(?\s*(?P<x>\d+)\s*,\s*(?P<y>\d+)"
)
REST = re.compile(r"\b(?:(?P<kind>long|short) rest|we rest)\b")
START_COMBAT = re.compile(
    r"\b(?:roll(?:s)? (?:for )?initiative|we fight|start (?:the )?(?:combat|fight|battle)"
    r"|to arms)\b"
)
END_COMBAT = re.compile(
    r"\b(?:end (?:the )?(?:combat|fight|battle)|(?:combat|fight|battle) is over|stop fighting)\b"
)
NEXT_CHAPTER = re.compile(r"\b(?:next chapter|advance (?:the )?chapter)\b")
END_ADVENTURE = re.compile(r"\b(?:end|finish|conclude) (?:the |this |our )?adventure\b")
CLAUSE_END = re.compile(r"[.;!?,]| and | then ")


def _alive(creature: dict[str, Any]) -> bool:
    return creature["hp"] > 0 and "dead" not in creature["conditions"]


class ScriptedProvider(GMProvider):
    """Deterministic table talk → real tool calls, for offline play and for tests."""

    name = "scripted"

    @property
    def model(self) -> str:
        return MODEL

    def run(self, session: Session) -> None:
        _ScriptedTurn(session).play()


class _ScriptedTurn:
    """One answer: who acts, what is on the map, and seeded dice."""

    def __init__(self, session: Session) -> None:
        self.session = session
        context = session.context
        self.talk = context.message.lower()
        self.turn_id = context.turn.pk
        self.actor_id = context.turn.actor_id
        self.creatures = {c["id"]: dict(c) for c in context.state["creatures"]}
        own = [c for c in self.creatures.values() if c["controlled_by_id"] == self.actor_id]
        self.character = own[0] if own else None
        self.speaker = self.character["name"] if self.character else context.speaker
        self.unsaid: list[str] = []  # narration since the last round
        self.rounds = 0

    def play(self) -> None:
        handlers: list[tuple[re.Pattern[str], Callable[[re.Match[str]], None]]] = [
            (END_ADVENTURE, self.end_adventure),
            (END_COMBAT, self.end_combat),
            (START_COMBAT, self.start_combat),
            (NEXT_CHAPTER, self.next_chapter),
            (REST, self.rest),
            (MOVE, self.move),
            (ATTACK, self.attack),
        ]
        said = sorted(
            ((m, handler) for pattern, handler in handlers for m in pattern.finditer(self.talk)),
            key=lambda pair: pair[0].start(),
        )
        for match, handler in said:
            handler(match)
        if not said:
            self.say(HINT)
        self.round([], stop_reason="end_turn")

    def say(self, text: str) -> None:
        if pause := settings.GM_SCRIPTED_WORD_DELAY:
            for word in text.split(" "):
                time.sleep(pause)
                self.session.say(word + " ")
        else:
            self.session.say(text + " ")
        self.unsaid.append(text + " ")

    def round(self, blocks: list[dict[str, Any]], *, stop_reason: str) -> Round:
        """The next round: the stored one when this turn ran before, else a new one."""
        text, self.unsaid = "".join(self.unsaid), []
        stored = self.session.round(self.rounds)
        if stored is None:
            self.session.step()
            time.sleep(settings.GM_SCRIPTED_DELAY)
            content = [{"type": "text", "text": text}] if text.strip() else []
            stored = self.session.record_round(
                content=content + blocks, stop_reason=stop_reason, model=MODEL, text=text
            )
        self.rounds += 1
        return stored

    def dice(self, match: re.Match[str]) -> random.Random:
        return random.Random(f"{self.turn_id}:{match.start()}")

    def call(self, tool: str, input: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        use = {
            "type": "tool_use",
            "id": f"scripted-{self.rounds + 1}",
            "name": tool,
            "input": input,
        }
        stored = self.round([use], stop_reason="tool_use")
        [use] = stored.tool_uses
        outcome = self.session.call_tool(
            use["name"], use["input"], model=MODEL, tool_use_id=use["id"]
        )
        if stored.results is None:
            result = {"type": "tool_result", "tool_use_id": use["id"], "content": outcome.as_text()}
            self.session.complete_round(stored, [{**result, "is_error": not outcome.ok}])
        return outcome.ok, outcome.content

    def find(self, text: str, *, foes_only: bool = False) -> dict[str, Any] | None:
        """The creature named earliest in `text`: full names first, then a distinctive word
        of a name ("the archer" for "Goblin Archer"); the living before the fallen."""
        pool = [
            c
            for c in self.creatures.values()
            if not (foes_only and c["controlled_by_id"] == self.actor_id)
        ]
        for names in (lambda c: [c["name"]], lambda c: c["name"].split()):
            hits = []
            for c in pool:
                for name in names(c):
                    if len(name) < 3:
                        continue
                    found = re.search(rf"\b{re.escape(name.lower())}\b", text)
                    if found:
                        hits.append((found.start(), -len(name), not _alive(c), c["id"]))
            if hits:
                return self.creatures[min(hits)[3]]
        return None

    def attack(self, match: re.Match[str]) -> None:
        target_text = CLAUSE_END.split(self.talk[match.end() :], maxsplit=1)[0]
        target = self.find(target_text, foes_only=True)
        if target is None:
            self.say(f"{self.speaker} looks for a foe to strike, but there is no such creature.")
            return
        if not _alive(target):
            self.say(f"{target['name']} is already down.")
            return
        rolled = roll(DAMAGE, self.dice(match))
        damage = rolled["total"]
        data: dict[str, Any] = {"creature_id": target["id"], "hp_delta": -damage}
        if damage >= target["hp"] + target["temp_hp"]:
            data["add_conditions"] = ["unconscious" if target["kind"] == "pc" else "dead"]
        ok, result = self.call("modify_creature", data)
        if not ok:
            self.say(f"{self.speaker} swings at {target['name']}, but: {result['error']}")
            return
        target.update(hp=result["hp"], temp_hp=result["temp_hp"], conditions=result["conditions"])
        dice = "+".join(map(str, rolled["rolls"])) + f"{rolled['modifier']:+d}"
        self.say(f"{self.speaker} strikes {target['name']} for {damage} damage ({DAMAGE}: {dice}).")
        if target["hp"] == 0:
            self.say(f"{target['name']} falls.")
        else:
            self.say(f"{target['name']} is down to {target['hp']}/{target['max_hp']} HP.")

    def move(self, match: re.Match[str]) -> None:
        who = match.group("who")
        if who in (None, "me", "myself"):
            mover = self.character
            if mover is None:
                self.say('You have no character on the map; name one, e.g. "move Lia to 3,4".')
                return
        else:
            mover = self.find(who)
            if mover is None:
                self.say(f"There is nobody called {who!r} to move.")
                return
        x, y = int(match.group("x")), int(match.group("y"))
        ok, result = self.call("move_token", {"creature_id": mover["id"], "x": x, "y": y})
        if ok:
            mover.update(x=x, y=y)
            self.say(f"{mover['name']} moves to ({x}, {y}).")
        else:
            self.say(f"{mover['name']} cannot move there: {result['error']}")

    def rest(self, match: re.Match[str]) -> None:
        kind = match.group("kind") or "short"
        ok, result = self.call("rest", {"kind": kind})
        if not ok:
            self.say(f"There is no rest to be had: {result['error']}")
            return
        self.say(f"The party settles in for a {kind} rest.")
        for restored in result["restored"]:
            name = self.creatures[restored["creature_id"]]["name"]
            self.say(f"{name} regains {restored['gained']} {restored['resource']}.")
        if kind == "long":
            self.say("Wounds close; everyone who rested is back to full health.")

    def start_combat(self, match: re.Match[str]) -> None:
        fighters = [
            c
            for c in self.creatures.values()
            if c["kind"] == "pc" or (c["kind"] == "monster" and _alive(c))
        ]
        if not any(c["kind"] == "monster" for c in fighters):
            self.say("There is nothing here to fight.")
            return
        dice = self.dice(match)
        initiative = {str(c["id"]): roll("1d20", dice)["total"] for c in fighters}
        ok, result = self.call(
            "start_combat",
            {"creature_ids": [c["id"] for c in fighters], "initiative": initiative},
        )
        if not ok:
            self.say(f"No new fight begins: {result['error']}")
            return
        order = ", ".join(
            f"{self.creatures[o['creature_id']]['name']} ({o['initiative']})"
            for o in result["order"]
        )
        self.say(f"Roll for initiative! The order: {order}.")

    def end_combat(self, match: re.Match[str]) -> None:
        ok, result = self.call("end_combat", {})
        if ok:
            self.say(f"The fight is over after {result['rounds']} round(s).")
        else:
            self.say(f"There is no fight to end: {result['error']}")

    def next_chapter(self, match: re.Match[str]) -> None:
        ok, result = self.call("advance_chapter", {})
        if ok:
            self.say(f"The story moves on: chapter “{result['title']}”.")
        else:
            self.say(f"The story cannot move on yet: {result['error']}")

    def end_adventure(self, match: re.Match[str]) -> None:
        summary = f"The adventure ended at the table's request ({self.speaker})."
        ok, result = self.call(
            "end_adventure", {"summary": summary, "achievements": ["adventure_complete"]}
        )
        if ok:
            self.say("And so the adventure ends. Well played, everyone.")
        else:
            self.say(f"The adventure goes on: {result['error']}")
