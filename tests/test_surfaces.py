"""The surfaces only translate: every rule of who may do what is decided by a service, with the
one policy module of the layer that owns it (`campaigns.permissions`, `audit.permissions`), and
recorded there when it refuses (docs/architecture.md#layers).

An AST walk over every module of the surfaces (`web/`) and the wiring (`config/`): none imports
a permissions module or a rule (`may_*`, `require_*`, `authorize*`, `runs_table`, …), calls one,
asks Django or guardian for a permission, decides from an owner's or an actor's id, or writes
the security log; and every service a surface calls is handed the person who acts, so that the
service can decide. What a surface draws (a button, a draggable token, the GM's view) it reads
from a selector (`audit.selectors.viewer_rights`), whose answers are the policy's. A new surface
(an MCP endpoint, another provider's webhook) is held to the same walk.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SURFACES = ("web", "config")
PROJECT = ("core", "campaigns", "ai_tools", "audit", "gm", "web", "config")

# The rules, by name: the policy modules' deciders and what they are built from.
DECIDER_PREFIXES = ("may_", "require_", "authorize")
DECIDERS = {
    "runs_table",
    "is_audit_staff",
    "is_member",
    "recording_denials",
    "has_perm",
    "has_perms",
    "get_perms",
    "get_user_perms",
    "ObjectPermissionChecker",
}
# Django's HTTP method guards share the prefix and decide no permission.
HTTP_METHOD_GUARDS = "django.views.decorators.http"
# Ids a surface would be deciding a right from if it compared them with the user's.
RIGHT_IDS = {"owner_id", "actor_id"}
# Helpers of the service modules that act for nobody: they read or compute, so they take no
# acting person.
NOT_ACTIONS = {"approval_answer", "approval_deadline", "skip_reason"}
# The keyword a service names the acting person by.
WHO_ACTS = {"by", "user", "actor", "author", "owner"}


def is_decider(name: str) -> bool:
    return name.startswith(DECIDER_PREFIXES) or name in DECIDERS


def surface_files() -> list[Path]:
    return sorted(p for folder in SURFACES for p in (ROOT / folder).rglob("*.py"))


def called(node: ast.Call) -> ast.expr:
    """What is called: `f` in `f(...)`, and in `database_sync_to_async(f)(...)` too."""
    func = node.func
    if isinstance(func, ast.Call) and func.args and callee(func).endswith("sync_to_async"):
        return func.args[0]
    return func


def callee(node: ast.Call) -> str:
    """The called name: `f(...)` → f, `obj.f(...)` → f."""
    func = called(node)
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def attribute_names(node: ast.AST) -> Iterator[str]:
    for part in ast.walk(node):
        if isinstance(part, ast.Attribute):
            yield part.attr


class Surface:
    """One surface module, parsed: where it decides a right itself, and which services it
    calls without saying who acts."""

    def __init__(self, path: Path, source: str | None = None) -> None:
        self.name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        self.tree = ast.parse(source if source is not None else path.read_text())
        self.imported: dict[str, str] = {}  # local name → the module it came from
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = node.module

    def decisions(self) -> list[str]:
        found = []
        for node in ast.walk(self.tree):
            for why in self._decides(node):
                found.append(f"{self.name}:{node.lineno} {why}")
        return found

    def _decides(self, node: ast.AST) -> Iterator[str]:
        if isinstance(node, ast.ImportFrom) and node.module:
            yield from self._imports(node.module, [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            yield from self._imports_modules([alias.name for alias in node.names])
        elif isinstance(node, ast.Call):
            name = callee(node)
            guard = self.imported.get(name) == HTTP_METHOD_GUARDS
            if is_decider(name) and not guard:
                yield f"calls {name}(): a permission rule, which only a service may apply"
            if name in ("create", "bulk_create") and _names(node.func, "SecurityEvent"):
                yield "writes a SecurityEvent: the service that refused records it"
        elif isinstance(node, ast.Compare):
            ids = RIGHT_IDS & {*attribute_names(node)}
            if ids:
                yield f"compares {', '.join(sorted(ids))}: a right decided by the surface"

    def _imports(self, module: str, names: list[str]) -> Iterator[str]:
        yield from self._imports_modules([module])
        if module == HTTP_METHOD_GUARDS:
            return
        for name in names:
            if is_decider(name):
                yield f"imports {name} from {module}: a permission rule, for services only"

    @staticmethod
    def _imports_modules(modules: list[str]) -> Iterator[str]:
        for module in modules:
            parts = module.split(".")
            if parts[0] in PROJECT and "permissions" in parts:
                yield f"imports {module}: the policy modules are for services (and selectors)"
            if parts[0] == "guardian":
                yield f"imports {module}: object permissions are read by the policy modules"

    def anonymous_service_calls(self) -> list[str]:
        """Calls of a service action that do not say who acts (`by=`, `user=`, …)."""
        found = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            name = callee(node)
            module = self._module_of(node)
            if ".services" not in f".{module}" or name in NOT_ACTIONS or name[:1].isupper():
                continue
            if not WHO_ACTS & {k.arg for k in node.keywords if k.arg}:
                found.append(f"{self.name}:{node.lineno} calls {module}.{name}() without who acts")
        return found

    def _module_of(self, node: ast.Call) -> str:
        """The module a called name was imported from (`services.x(...)`: `services`'s)."""
        func = called(node)
        if isinstance(func, ast.Name):
            return self.imported.get(func.id, "")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            module = self.imported.get(owner, "")
            return f"{module}.{owner}" if module else ""
        return ""


def _names(node: ast.AST, name: str) -> bool:
    return any(isinstance(part, ast.Name) and part.id == name for part in ast.walk(node))


@pytest.mark.parametrize("path", surface_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_surface_decides_a_permission(path: Path) -> None:
    found = Surface(path).decisions()
    assert not found, (
        "a surface decides a right itself; give the acting user (and `ip`) to the service and "
        "let it decide with the layer's permissions module, or draw from "
        "`audit.selectors.viewer_rights`:\n" + "\n".join(found)
    )


@pytest.mark.parametrize("path", surface_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_service_a_surface_calls_is_told_who_acts(path: Path) -> None:
    found = Surface(path).anonymous_service_calls()
    assert not found, (
        "a service cannot decide who may without the acting person (`by=request.user`):\n"
        + "\n".join(found)
    )


def test_the_walk_reads_every_surface() -> None:
    names = {str(p.relative_to(ROOT)) for p in surface_files()}
    assert {"web/api/turns.py", "web/pages/setup.py", "web/admin/reverting.py"} <= names
    assert {"web/consumers.py", "config/urls.py"} <= names


SNEAKY_VIEW = """
from django.views.decorators.http import require_POST
from campaigns.permissions import require_owner
from campaigns.services import chapter_create

@require_POST
def view(request, campaign):
    if request.user.pk != campaign.owner_id:
        raise PermissionError
    require_owner(campaign=campaign, user=request.user, action="chapter_create")
    if not request.user.has_perm("campaigns.change_campaign"):
        raise PermissionError
    return chapter_create(campaign=campaign, title="Coup")
"""


def test_a_surface_that_decides_is_caught() -> None:
    surface = Surface(Path("sneaky.py"), SNEAKY_VIEW)
    assert surface.decisions() == [
        "sneaky.py:3 imports campaigns.permissions: the policy modules are for services "
        "(and selectors)",
        "sneaky.py:3 imports require_owner from campaigns.permissions: a permission rule, for "
        "services only",
        "sneaky.py:8 compares owner_id: a right decided by the surface",
        "sneaky.py:10 calls require_owner(): a permission rule, which only a service may apply",
        "sneaky.py:11 calls has_perm(): a permission rule, which only a service may apply",
    ]
    assert surface.anonymous_service_calls() == [
        "sneaky.py:13 calls campaigns.services.chapter_create() without who acts"
    ]
