"""docs/DESIGN.md, layout and habits 1–3, checked on the source.

The apps' DAG, the pure core and the thin API and page modules are import-linter contracts in
`pyproject.toml`; `lint-imports` reads them (as `make lint` does) and this test runs it, so the
suite fails the moment a contract breaks. What the contracts cannot say is checked here on
the syntax tree: no API or page module touches the ORM, no module imports inside a function
(so no circle hides behind a lazy import), and no module imports itself back through others."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ("events", "conversations", "memory", "policy", "support", "turns", "agents")
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


def imports_of(name: str, *, in_functions: bool = True) -> set[str]:
    """Every module `name` imports (absolute names), anywhere in its source or only at its
    top level."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    nodes = ast.walk(tree) if in_functions else iter(tree.body)
    out = set()
    for node in nodes:
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


def test_it_keeps_the_import_contracts():
    """The contracts of `pyproject.toml`: the apps form a DAG, the pure core imports only the
    standard library, API and page modules import no models and no pure-core decision."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout, done.stdout


THIN = sorted(
    m
    for m in MODULES
    if m.rpartition(".")[2].endswith(("api", "views")) and not m.startswith("config.")
)


def test_it_finds_the_modules_it_checks():
    assert {
        "conversations.api",
        "memory.api",
        "memory.views",
        "policy.api",
        "policy.views",
        "turns.api",
        "turns.views",
        "support.views",
    } <= set(THIN)
    assert "memory.resolver" in imports_of("memory.selectors.resolution")


@pytest.mark.parametrize("name", THIN)
def test_it_keeps_api_and_page_modules_off_the_orm(name):
    """Habit 3: validate, call one service or selector, serialize — no `.objects`, no
    queryset built in the view."""
    tree = ast.parse(MODULES[name].read_text())
    uses = sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in {"objects", "_meta"}
        }
    )
    assert not uses, f"{name} uses the ORM at lines {uses}"


# App loading, not a cycle: an AppConfig imports its app's modules once the registry is ready,
# and the catalog (imported by migrations while models load) reads its version model then.
LAZY_ALLOWED = {
    "agents.apps",
    "support.apps",
    "config.apps",
    "memory.apps",
    "policy.apps",
    "turns.apps",
    "conversations.apps",
    "config.catalog",
    # Start-up cost, not a cycle: the MCP SDK behind `/mcp` takes about a second to import, so
    # `agents.urls.mcp_view` imports it on the first call, not in every process that loads
    # the URLs (gunicorn's master imports it before forking: gunicorn.conf.py).
    "agents.urls",
}


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m not in LAZY_ALLOWED))
def test_it_finds_no_import_hiding_inside_a_function(name):
    top = imports_of(name, in_functions=False)
    inner = {m for m in imports_of(name) - top if m.split(".")[0] in PACKAGES}
    assert not inner, f"{name} imports {sorted(inner)} inside a function"


def project_imports(name: str) -> set[str]:
    return {m for m in imports_of(name) if m in MODULES and m != name}


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


def test_it_finds_no_module_importing_itself_back_through_others():
    assert circles({name: project_imports(name) for name in MODULES}) == []


def test_it_sees_a_circle_through_a_third_module():
    graph = {
        "a.views": {"b.helpers"},
        "b.helpers": {"c.urls"},
        "c.urls": {"a.views"},
        "d": {"a.views"},
    }
    assert circles(graph) == [["a.views", "b.helpers", "c.urls"]]


MAX_LINES = 600  # docs/DECISIONS.md, "Modules of one concern, at most 600 lines"


def test_it_finds_no_module_outside_migrations_past_600_lines():
    """Every Python file the repository tracks — the apps, the benchmark, the tests — is at
    most 600 lines; migrations are generated and exempt."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(tracked) > 100  # the listing worked
    too_long = {}
    for name in tracked:
        if "/migrations/" in f"/{name}":
            continue
        lines = (ROOT / name).read_text(encoding="utf-8").count("\n")
        if lines > MAX_LINES:
            too_long[name] = lines
    assert too_long == {}


def test_it_finds_every_test_named_as_a_test_it_sentence():
    """docs/DESIGN.md, habit 6: a test is named as a sentence about its file's subject,
    `test_it_…`, so a failing test reads as what the code no longer does."""
    found, stray = 0, []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("test_"):
                    found += 1
                    if not node.name.startswith("test_it_"):
                        stray.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert found > 1000  # the walk found the suite
    assert stray == []
