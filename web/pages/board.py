"""The board of the campaign page, shaped for its templates: the scene, the battle map, the
combat tracker, the rosters of creature cards and the forms' choices.

One renderer (docs/architecture.md): the server draws every part of the board from
`campaign_state`, on the page and as the fragment `/campaigns/{id}/board/` that the page's
script swaps in when an event says the world changed. No display rule here has a copy in the
script: percentages, bands, labels, ordering, fog and who may drag a token are decided here.
What a person may see is not: the board is drawn from the dump as their sight sees it
(`campaigns.visibility.state_seen`), so a player's board has nothing of what the fog hides.
"""

import math
from collections import defaultdict
from typing import Any

from audit.selectors import Rights
from campaigns.models import Campaign
from campaigns.visibility import UNSEEN, fog_of_state

ROSTERS = (("party", "pc", "Party"), ("foes", "monster", "Foes"), ("others", "npc", "Others"))

# The battle map's geometry: cells of CELL user units; the grid is the campaign's, as the GM set
# it (`campaign_map_set`), and stays so. Only a token the GM's tool put beyond it (the tool's
# bound is MAX_CELL) widens the drawing to show it, never a player's move.
CELL = 40
MAX_CELL = 1000
RING = 17
RING_LENGTH = 2 * math.pi * RING


def hp_percent(hp: int, max_hp: int) -> int:
    """Rounded half up; the bar's width and its band."""
    return int(100 * hp / max_hp + 0.5) if max_hp > 0 else 0


def hp_band(hp: int, max_hp: int) -> str:
    if hp <= 0:
        return "down"
    percent = hp_percent(hp, max_hp)
    return "ok" if percent > 50 else "hurt" if percent > 25 else "critical"


def board(state: dict[str, Any], people: dict[int, str]) -> dict[str, Any]:
    """Rosters of creature cards, the combat tracker and the scene, from a state dump."""
    resources: dict[int, list] = defaultdict(list)
    items: dict[int, list] = defaultdict(list)
    for row in state["resources"]:
        resources[row["creature_id"]].append({**row, "label": row["name"].replace("_", " ")})
    for row in state["items"]:
        items[row["creature_id"]].append({**row, "label": row["name"].replace("_", " ")})
    cards = [
        {
            **c,
            "percent": hp_percent(c["hp"], c["max_hp"]),
            "band": hp_band(c["hp"], c["max_hp"]),
            "initial": c["name"][:1].upper(),
            "player": people.get(c["controlled_by_id"]),
            "saves": c["kind"] == "pc"
            and (c["hp"] == 0 or c["death_save_successes"] or c["death_save_failures"]),
            "resources": resources[c["id"]],
            "items": items[c["id"]],
        }
        for c in state["creatures"]
    ]
    return {
        "rosters": [
            {"key": key, "title": title, "cards": [c for c in cards if c["kind"] == kind]}
            for key, kind, title in ROSTERS
        ],
        "combat": _combat(state),
        "scene": _scene(state),
    }


def _active_encounter(state: dict[str, Any]) -> dict[str, Any] | None:
    active = state["campaign"]["active_encounter_id"]
    return next((e for e in state["encounters"] if e["id"] == active), None)


def _combat(state: dict[str, Any]) -> dict[str, Any] | None:
    encounter = _active_encounter(state)
    if encounter is None:
        return None
    creatures = {c["id"]: c for c in state["creatures"]}
    return {
        "round": encounter["round"],
        "order": [
            {
                "creature_id": slot["creature_id"],
                "name": _combatant(slot["creature_id"], creatures),
                "initiative": slot.get("initiative"),
                "current": index == encounter["turn_index"],
                "down": slot["creature_id"] is not None
                and creatures.get(slot["creature_id"], {"hp": 0})["hp"] <= 0,
            }
            for index, slot in enumerate(encounter["order"])
        ],
    }


def _combatant(creature_id: Any, creatures: dict[int, dict[str, Any]]) -> str:
    """A slot's name: a player's dump leaves the id of a combatant the fog hides out."""
    if creature_id is None:
        return UNSEEN
    return creatures[creature_id]["name"] if creature_id in creatures else "(gone)"


def _scene(state: dict[str, Any]) -> dict[str, Any]:
    campaign = state["campaign"]
    chapter_id, dungeon_id = campaign["current_chapter_id"], campaign["active_dungeon_id"]
    chapter = next((c for c in state["chapters"] if c["id"] == chapter_id), None)
    dungeon = next((d for d in state["dungeons"] if d["id"] == dungeon_id), None)
    return {
        "chapter": f"Chapter {chapter['position']} · {chapter['title']}" if chapter else "",
        "dungeon": dungeon["name"] if dungeon else "",
        "location": campaign["location"],
        "text": campaign["scene"],
        "completed": campaign["status"] == Campaign.Status.COMPLETED,
    }


def options(state: dict[str, Any], members: list[dict[str, Any]]) -> dict[str, list]:
    """The choices the forms' selects list (value, label)."""
    return {
        "creatures": [(c["id"], c["name"]) for c in state["creatures"]],
        "chapters": [(c["id"], f"{c['position']}. {c['title']}") for c in state["chapters"]],
        "dungeons": [(d["id"], d["name"]) for d in state["dungeons"]],
        "members": [("", "nobody"), *((m["username"], m["username"]) for m in members)],
    }


# ---- the battle map ---------------------------------------------------------------------------


def initials(name: str) -> str:
    return "".join(word[0].upper() for word in name.split()[:2])


def battle_map(
    state: dict[str, Any],
    *,
    rights: Rights,
    grid: tuple[int, int],
    background: str = "",
) -> dict[str, Any]:
    """The SVG map for one person, from the dump as they see it: the campaign's grid (`grid`,
    cols × rows), its background image (`background`, its URL, or none), fog, and a token per
    creature with its HP ring, the active combatant marked, whether this person may drag it
    (`Rights.moves`, the rule the move enforces) and why not, the tokens sharing its cell (a
    stack, which a click offers to pick from) and, on the GM's map, whether the fog hides it
    from the players."""
    fog = fog_of_state(state)
    xs = [c["x"] for c in state["creatures"]]
    ys = [c["y"] for c in state["creatures"]]
    cols = min(MAX_CELL + 1, max([grid[0], *(x + 1 for x in xs)]))
    rows = min(MAX_CELL + 1, max([grid[1], *(y + 1 for y in ys)]))
    encounter = _active_encounter(state)
    order = encounter["order"] if encounter else []
    turn = encounter["turn_index"] if encounter else -1
    active = order[turn]["creature_id"] if 0 <= turn < len(order) else None
    tokens = [map_token(c, fog.hidden, active, rights=rights) for c in state["creatures"]]
    cells: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for token in tokens:
        cells[token["x"], token["y"]].append(token)
    for token in tokens:
        token["stack"] = len(cells[token["x"], token["y"]])
    stacks = [
        {"x": x, "y": y, "tokens": here}
        for (x, y), here in sorted(cells.items(), key=lambda cell: (cell[0][1], cell[0][0]))
        if len(here) > 1
    ]
    return {
        "stacks": stacks,
        "cell": CELL,
        "grid_width": grid[0] * CELL,
        "grid_height": grid[1] * CELL,
        "background": background,
        "cols": cols,
        "rows": rows,
        "width": cols * CELL,
        "height": rows * CELL,
        "holes": [(x * CELL, y * CELL) for x, y in sorted(fog.revealed)],
        "fog": fog.in_play,
        "tokens": tokens,
    }


def map_token(
    c: dict[str, Any], hidden: frozenset[int], active: Any, *, rights: Rights
) -> dict[str, Any]:
    movable = rights.moves(kind=c["kind"], controlled_by_id=c["controlled_by_id"])
    in_fog = c["id"] in hidden
    classes = ["map-token", f"kind-{c['kind']}", f"band-{hp_band(c['hp'], c['max_hp'])}"]
    classes += [name for name, on in (("movable", movable), ("active", c["id"] == active)) if on]
    if in_fog:
        classes.append("in-fog")
    label = [f"{c['name']} at {c['x']},{c['y']}, HP {c['hp']} of {c['max_hp']}"]
    if c["id"] == active:
        label.append("acting now")
    if c["kind"] == "pc" and c["controlled_by_id"] == rights.user.pk:
        label.append("your character")
    if in_fog:
        label.append("hidden from the players by fog")
    ratio = min(1, max(0, c["hp"] / c["max_hp"])) if c["max_hp"] > 0 else 0
    return {
        "id": c["id"],
        "name": c["name"],
        "x": c["x"],
        "y": c["y"],
        "left": c["x"] * CELL,
        "top": c["y"] * CELL,
        "classes": " ".join(classes),
        "movable": movable,
        "refusal": ""
        if movable
        else f"Only {'its player' if c['kind'] == 'pc' else 'the GM'} can move {c['name']}.",
        "active": c["id"] == active,
        "label": ", ".join(label),
        "ring": f"{ratio * RING_LENGTH:.2f} {RING_LENGTH:.2f}",
        "initials": initials(c["name"]),
    }
