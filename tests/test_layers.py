"""DESIGN layout and habits 1–3, checked on the source: `config/` is the ground floor (only
`config/urls.py` imports an app), views read through selectors (no view imports the resolver
or the policy engine, nor another app's views), and no module imports, directly or through
others, a module that imports it back — counting imports inside functions too, so a circle
cannot hide behind a lazy import."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ("memory", "policy", "conversations", "support", "turns")
PACKAGES = ("config", *APPS)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            name = ".".join(parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = modules()


def imports_of(name: str) -> set[str]:
    """Every module `name` imports anywhere in its source (absolute names)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            out.add(target)
            out.update(f"{target}.{alias.name}" for alias in node.names)
    return out


def project_imports(name: str) -> set[str]:
    return {m for m in imports_of(name) if m in MODULES and m != name}


def test_it_finds_the_modules_it_checks():
    assert {"config.urls", "memory.views", "policy.views", "turns.views", "support.views"} <= set(MODULES)
    assert "memory.resolver" in imports_of("memory.selectors")


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("config.") and m != "config.urls"))
def test_config_imports_no_app(name):
    apps = {m for m in imports_of(name) if m.split(".")[0] in APPS}
    assert not apps, f"{name} imports {sorted(apps)}; only config/urls.py may"


VIEWS = sorted(m for m in MODULES if m.endswith(".views"))


@pytest.mark.parametrize("name", VIEWS)
def test_views_read_through_selectors(name):
    imported = imports_of(name)
    assert not {"memory.resolver", "policy.engine"} & imported, f"{name} runs the pure core itself"
    app = name.split(".")[0]
    sideways = {
        m for m in imported & set(MODULES)
        if m.split(".")[0] != app and (m.endswith(".views") or m.rpartition(".")[0].endswith(".views"))
    }
    assert not sideways, f"{name} imports another app's views: {sorted(sideways)}"


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`: its strongly connected components of two or more
    modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def test_no_module_imports_itself_back_through_others():
    assert circles({name: project_imports(name) for name in MODULES}) == []


def test_the_circle_check_sees_a_circle_through_a_third_module():
    graph = {"a.views": {"b.helpers"}, "b.helpers": {"c.urls"}, "c.urls": {"a.views"}, "d": {"a.views"}}
    assert circles(graph) == [["a.views", "b.helpers", "c.urls"]]
