"""Phrases the tools' describers share (`WriteTool.describe`), so lists, counts, cells and
long texts read the same in every tool's words, and no internal name (`healing_potion`,
`spell_slot`) reaches people as the code spells it."""

from typing import Any


def listing(names: list[str]) -> str:
    """`Thorin`, `Thorin and Goblin`, `Thorin, Wren and Goblin`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def clip(text: str, size: int) -> str:
    """At most `size` characters, an ellipsis marking a cut."""
    return text if len(text) <= size else f"{text[: size - 1]}…"


def spoken(name: str) -> str:
    """A name as people say it: `healing_potion` reads `healing potion`, `keep-cleansed` reads
    `keep cleansed`."""
    return " ".join(name.replace("_", " ").replace("-", " ").split())


def counted(count: int, word: str, plural: str = "") -> str:
    """`1 map cell`, `3 map cells`."""
    return f"{count} {word if count == 1 else plural or word + 's'}"


def cell(x: Any, y: Any) -> str:
    """A map cell as the map's own labels read it: column, row."""
    return f"{x},{y}"


def change(was: Any, now: Any) -> str:
    """` (7 → 3)`: a value's before → after, or nothing where either is unknown or it did not
    change."""
    if was is None or now is None or was == now:
        return ""
    return f" ({was} → {now})"
