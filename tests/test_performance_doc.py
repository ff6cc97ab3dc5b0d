"""docs/performance.md holds, for each benchmark `make bench` runs, what it measures, how to run
it and one table of its current figures; the runs that led there live in git history, not in the
file. These tests keep the file and the benchmarks in step."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
TABLE_HEADER = "| goal | figure | date | commit | host | load |"
RUN_LINE = re.compile(r"^\s*\.venv/bin/python bench/\w+\.py.*$", re.MULTILINE)


def benchmarks() -> list[str]:
    """The benchmarks `make bench` runs, in its order."""
    recipe = (ROOT / "Makefile").read_text().split("\nbench: ", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"bench/(\w+)\.py", recipe)


def sections() -> dict[str, str]:
    """The doc's benchmark sections by benchmark name: "## `name.py`: …" up to the next "## "."""
    parts = re.split(r"^## ", DOC.read_text(), flags=re.MULTILINE)[1:]
    found = (re.match(r"`(\w+)\.py`: ", part) for part in parts)
    return {match[1]: part for match, part in zip(found, parts, strict=True) if match}


def usage(text: str, name: str) -> str:
    """The run line for bench/`name`.py in `text`, with its continuation lines, one space apart."""
    start = text.index(f".venv/bin/python bench/{name}.py")
    return " ".join(text[start:].split("\n\n", 1)[0].split())


def test_every_benchmark_has_a_section_in_makes_order_and_no_section_lacks_one():
    assert list(sections()) == benchmarks()


@pytest.mark.parametrize("name", benchmarks())
def test_each_section_has_one_table_of_current_figures(name: str):
    section = sections()[name]
    assert section.count("| goal |") == 1, f"{name}: one table"
    assert TABLE_HEADER in section, f"{name}: the table's columns"
    rows = section.split(TABLE_HEADER, 1)[1].strip().splitlines()[1:]
    figures = [row for row in rows if row.startswith("|")]
    assert figures, f"{name}: no figure"
    for row in figures:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 6 and all(cells), f"{name}: a row with an empty cell: {row}"


@pytest.mark.parametrize("name", benchmarks())
def test_each_section_runs_its_benchmark_as_its_docstring_says(name: str):
    docstring = ast.get_docstring(ast.parse((ROOT / "bench" / f"{name}.py").read_text()))
    assert docstring, f"bench/{name}.py has no docstring"
    assert "[--smoke]" in usage(docstring, name)
    assert usage(sections()[name], name) == usage(docstring, name)


def test_the_doc_carries_no_run_output():
    """A run's output is history: the tables carry the figures, git keeps the runs."""
    text = DOC.read_text()
    assert "```" not in text
    assert len(RUN_LINE.findall(text)) == len(benchmarks())
