"""A logged tool call in plain words, for the feed and the undo dialog: written once, here.

Built from the call's tool name and input, and the creature's HP before (the revert snapshot) and
after (the post-state), so "Goblin takes 4 damage (7 → 3)" reads what really happened, clamps
included. A call this cannot describe falls back to its tool's own summary, with names for ids.
For a player, a call that tells of a creature the fog hides reads only that something happens
in the fog (`campaigns.visibility`), and the names given for hidden creatures are "Someone
unseen".
"""

from collections.abc import Callable
from typing import Any

from ai_tools import entities, registry
from campaigns.visibility import HIDDEN_CHANGE, Fog, call_hidden

SCENE_CLIP = 80


def _clip(text: str, size: int = SCENE_CLIP) -> str:
    return text if len(text) <= size else f"{text[: size - 1]}…"


def _creature_row(logged: dict[str, Any], pk: Any) -> dict[str, Any]:
    """The creature's fields as logged, whatever facets (`creature:7/vitals`) they are kept in."""
    wanted = entities.key("creature", pk)
    row: dict[str, Any] = {}
    for key, fields in logged.items():
        if entities.root(key) == wanted and isinstance(fields, dict):
            row.update(fields)
    return row


def _listing(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _modify_creature(data, name, before, after) -> list[str]:
    who = name(data["creature_id"])
    was = _creature_row(before, data["creature_id"]).get("hp")
    now = _creature_row(after, data["creature_id"]).get("hp")
    lines = []
    if isinstance(was, int) and isinstance(now, int) and was != now:
        if now < was:
            lines.append(f"{who} takes {was - now} damage ({was} → {now})")
        else:
            lines.append(f"{who} heals {now - was} HP ({was} → {now})")
    elif "hp_delta" in data and data["hp_delta"] < 0:
        lines.append(f"{who} takes {-data['hp_delta']} damage")
    elif "hp_delta" in data and data["hp_delta"] > 0:
        lines.append(f"{who} heals {data['hp_delta']} HP")
    elif "set_hp" in data:
        lines.append(f"{who} is set to {data['set_hp']} HP")
    if "temp_hp" in data:
        lines.append(f"{who} has {data['temp_hp']} temporary HP")
    if data.get("add_conditions"):
        lines.append(f"{who} is now {_listing(data['add_conditions'])}")
    if data.get("remove_conditions"):
        lines.append(f"{who} is no longer {_listing(data['remove_conditions'])}")
    if data.get("death_save") == "reset":
        lines.append(f"{who}'s death saves are reset")
    elif data.get("death_save"):
        lines.append(f"{who} makes a death save: {data['death_save']}")
    return lines


def _spawn(data, name, before, after) -> list[str]:
    where = f" at {data['x']},{data['y']}" if "x" in data and "y" in data else ""
    return [f"{data['name']} ({data['kind']}, {data['hp']} HP) appears{where}"]


def _give_item(data, name, before, after) -> list[str]:
    who, count = name(data["creature_id"]), data["quantity"]
    if count < 0:
        return [f"{who} loses {-count} × {data['item']}"]
    return [f"{who} gets {count} × {data['item']}"]


def _rest(data, name, before, after) -> list[str]:
    ids = data.get("creature_ids") or []
    who = _listing([name(pk) for pk in ids]) if ids else "The party"
    return [f"{who} take{'s' if len(ids) == 1 else ''} a {data['kind']} rest"]


DESCRIBE: dict[str, Callable[..., list[str]]] = {
    "modify_creature": _modify_creature,
    "move_token": lambda d, name, b, a: [f"{name(d['creature_id'])} moves to {d['x']},{d['y']}"],
    "set_scene": lambda d, name, b, a: [f"The scene is now: {_clip(d['description'])}"],
    "spawn_creature": _spawn,
    "start_combat": lambda d, name, b, a: [
        f"Combat starts: {_listing([name(pk) for pk in d['creature_ids']])}"
    ],
    "end_combat": lambda d, name, b, a: ["Combat ends"],
    "advance_turn": lambda d, name, b, a: ["The next combatant's turn"],
    "give_item": _give_item,
    "consume_resource": lambda d, name, b, a: [
        f"{name(d['creature_id'])} uses {d['amount']} × {d['resource'].replace('_', ' ')}"
    ],
    "rest": _rest,
    "end_adventure": lambda d, name, b, a: ["The adventure ends"],
    "advance_chapter": lambda d, name, b, a: ["The story moves to the next chapter"],
    "activate_dungeon": lambda d, name, b, a: ["The party enters a dungeon"],
    "write_memory": lambda d, name, b, a: ["The GM makes a note"],
    "reveal_fog": lambda d, name, b, a: [f"{len(d['cells'])} map cell(s) revealed"],
}


def concealed(data: Any, post_state: Any, fog: Fog | None) -> bool:
    """Whether a call tells a player (who sees the world through `fog`; None: the GM) of a
    creature the fog hides: it acts on one, made one, or put one in the fog."""
    if fog is None:
        return False
    made = [  # a whole creature row written: one the call made
        int(entities.parse(key)[1])
        for key in entities.logged_map(post_state)
        if key.startswith("creature:") and key == entities.root(key)
    ]
    return call_hidden(data, fog, created=made)


def describe(
    tool_name: str,
    data: Any,
    *,
    names: dict[int, str],
    snapshot: Any = None,
    post_state: Any = None,
    fallback: Callable[[str], str] = lambda text: text,
    fog: Fog | None = None,
) -> str:
    """One call in people's words, from its logged `revert_snapshot` and `post_state` (either
    may be missing: a failed or pending call). Input a describer cannot read (a failed call's,
    an old row's) gets the tool's summary through `fallback`. With a player's `fog`, a call
    that tells of a hidden creature is HIDDEN_CHANGE."""
    if concealed(data, post_state, fog):
        return HIDDEN_CHANGE

    def name(pk: Any) -> str:
        return names.get(pk, f"creature {pk}") if isinstance(pk, int) else str(pk)

    describer = DESCRIBE.get(tool_name)
    if describer is not None and isinstance(data, dict):
        try:
            before, after = entities.snapshot_map(snapshot), entities.logged_map(post_state)
            lines = describer(data, name, before, after)
        except (KeyError, TypeError, ValueError, AttributeError):
            lines = []
        if lines:
            return "; ".join(lines)
    return fallback(registry.summary(tool_name, data))
