"""The product's documentation lives in the repository: the README and docs/ link only to files
of the repository (and to headings that exist in them), never to a path outside it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH_LIKE = re.compile(r"(?<![\w/.])\.\./[\w./-]+")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {
        slug(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")
    }


def test_the_docs_exist_and_the_readme_links_each():
    readme = (ROOT / "README.md").read_text()
    for name in ("architecture", "api", "operations"):
        assert (ROOT / "docs" / f"{name}.md").is_file()
        assert f"](docs/{name}.md)" in readme


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_stays_in_the_repository_and_reaches_its_target(doc: Path):
    text = doc.read_text()
    assert not PATH_LIKE.findall(re.sub(r"\]\([^)]*\)", "]()", text)), "a path outside the repo"
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        assert resolved.is_relative_to(ROOT), f"{target} leaves the repository"
        assert resolved.is_file(), f"{target}: no such file"
        if anchor:
            assert anchor in anchors(resolved), f"{target}: no such heading"
