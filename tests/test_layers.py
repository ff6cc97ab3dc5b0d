"""Imports between the project's top-level packages run downhill only (docs/architecture.md#layers).

The layers, bottom to top: core (plumbing every layer may use) → campaigns (the world) →
ai_tools (the tools) → audit (the log) → gm (the game master) → web (the surfaces) → config
(wiring). A package may import itself and the packages listed for it, nothing above;
docs/architecture.md states the same list. Imports inside functions count too: a lazy import that
climbs is still a climb.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "campaigns": {"core"},
    "ai_tools": {"core", "campaigns"},
    "audit": {"core", "campaigns", "ai_tools"},
    "gm": {"core", "campaigns", "ai_tools", "audit"},
    "web": {"core", "campaigns", "ai_tools", "audit", "gm"},
    "config": {"core", "campaigns", "ai_tools", "audit", "gm", "web"},
}


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """Every absolute module name a file imports (relative imports resolved against its package)."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                yield node.lineno, ".".join([*base, node.module or ""]).rstrip(".")
            elif node.module:
                yield node.lineno, node.module


def climbs(path: Path) -> list[str]:
    """The imports in one file that reach a project package its layer may not import."""
    layer = path.relative_to(ROOT).parts[0]
    found = []
    for lineno, module in imported_modules(path):
        target = module.split(".")[0]
        if target in ALLOWED and target != layer and target not in ALLOWED[layer]:
            found.append(f"{path.relative_to(ROOT)}:{lineno} imports {module}")
    return found


def project_files() -> list[Path]:
    return sorted(p for layer in ALLOWED for p in (ROOT / layer).rglob("*.py"))


def test_every_layer_folder_exists_and_holds_code() -> None:
    for layer in ALLOWED:
        assert list((ROOT / layer).rglob("*.py")), f"{layer}/ has no modules"


@pytest.mark.parametrize("layer", list(ALLOWED))
def test_imports_only_run_downhill(layer: str) -> None:
    found = [c for p in project_files() if p.relative_to(ROOT).parts[0] == layer for c in climbs(p)]
    assert not found, (
        "imports that climb a layer (move the code down, or the caller up; allowed: "
        f"{layer} -> {sorted(ALLOWED[layer]) or 'no project package'}):\n" + "\n".join(found)
    )


def test_a_climbing_import_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "campaigns").mkdir()
    module = tmp_path / "campaigns" / "selectors.py"
    module.write_text("def f():\n    from audit.models import ToolInvocation\n")
    assert climbs(module) == ["campaigns/selectors.py:2 imports audit.models"]
