"""What a person reads on a page, and the words that must never be among it: the visible
text of a fragment (no script, no style, nothing `hidden`, and of a closed <details> only its
summary: the raw fields a card folds away are not read unless asked for), and the marks of
internal names and Python reprs the card and feed tests sweep it for."""

import re
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
UNREAD = {"script", "style", "template", "noscript"}

# What the code's own spelling of things looks like, where a person should read words.
INTERNAL = {
    "a UUID": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"),
    "an entity key": re.compile(r"\b[a-z_]+:\d+"),
    "an id in words": re.compile(
        r"\b(?:creature|chapter|dungeon|encounter|item|resource|memory|fog)s? \d+\b"
    ),
    "an id field": re.compile(r"(?:\bid\b|_id\b|\bpk\b)"),
    "a snake_case name": re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b"),
    "a Python list or dict": re.compile(r"[\[{]\s*['\"]|['\"]\s*[\]}]|\[\]|\{\}"),
    "a Python constant": re.compile(r"\b(?:None|True|False)\b"),
    "an object repr": re.compile(r"<[A-Za-z.]+ object at 0x|\bobject at 0x"),
    "a model id": re.compile(r"\b[a-z][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*\b"),
}


class _Reader(HTMLParser):
    def __init__(self, *, open_details: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.open_details = open_details
        self.stack: list[tuple[str, bool]] = []  # (tag, whether its content is read)
        self.parts: list[str] = []

    def _reading(self) -> bool:
        return all(read for _, read in self.stack)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in VOID:
            return
        names = dict(attrs)
        read = tag not in UNREAD and "hidden" not in names
        if self.stack and self.stack[-1][0] == "details-closed":
            read = read and tag == "summary"  # a closed <details> shows its summary only
        if tag == "details" and not (self.open_details or "open" in names):
            tag = "details-closed"
        self.stack.append((tag, read))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            name = self.stack[i][0]
            if name == tag or (tag == "details" and name == "details-closed"):
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if self._reading() and not (self.stack and self.stack[-1][0] == "details-closed"):
            self.parts.append(data)


def visible_text(markup: str, *, open_details: bool = False) -> str:
    """The words a person reads in `markup`, whitespace collapsed; with `open_details`, those
    of every <details> opened too."""
    reader = _Reader(open_details=open_details)
    reader.feed(markup)
    reader.close()
    return " ".join(" ".join(reader.parts).split())


def internal_words(text: str) -> list[tuple[str, str]]:
    """Each internal name or repr found in `text`, as (what it looks like, the match)."""
    return [(what, m[0]) for what, rule in INTERNAL.items() for m in rule.finditer(text)]
