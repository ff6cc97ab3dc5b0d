"""The product's documentation lives in the repository: the README and docs/ link only to files
of the repository (and to headings that exist in them), never to a path outside it."""

import re
import subprocess
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


CODE_REFERENCE = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?")
# The documents the project began from, which the repository does not carry: a section sign
# after their names, the style file, or the sibling folder they lived in. Spelled as classes so
# that this file does not cite them itself.
OUTSIDE = re.compile(r"(?:SPEC|STYLE) \u00a7|STYLE[.]md|[.][.]/shared")


def _code_files() -> list[Path]:
    tracked = subprocess.run(
        ["git", "ls-files", "*.py", "*.js", "*.html", "*.css", "*.md", "Makefile", "Procfile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in tracked if (ROOT / name).is_file()]


def test_the_code_cites_only_docs_of_the_repository_and_their_headings():
    """A comment's pointer (`docs/api.md#dice`) names a file and heading that exist, and nothing
    cites a document outside the repository: a maintainer has only what is here."""
    this = Path(__file__).resolve()
    for path in _code_files():
        if path == this:
            continue
        text = path.read_text(encoding="utf-8")
        assert not OUTSIDE.search(text), f"{path.relative_to(ROOT)} cites a document outside"
        for name, anchor in CODE_REFERENCE.findall(text):
            doc = ROOT / "docs" / name
            assert doc.is_file(), f"{path.relative_to(ROOT)}: docs/{name} does not exist"
            if anchor:
                assert anchor in anchors(doc), f"{path.relative_to(ROOT)}: docs/{name}#{anchor}"
