"""Phrases the tools' describers share (`WriteTool.describe`), so lists and long texts read
the same in every tool's words."""


def listing(names: list[str]) -> str:
    """`Thorin`, `Thorin and Goblin`, `Thorin, Wren and Goblin`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def clip(text: str, size: int) -> str:
    """At most `size` characters, an ellipsis marking a cut."""
    return text if len(text) <= size else f"{text[: size - 1]}…"
