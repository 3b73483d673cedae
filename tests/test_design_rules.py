"""docs/DESIGN.md's rules of where things happen, checked on the syntax tree of every module.

- Habit 2, "Services are the only writers": a model is written (`.save()`, `.delete()`,
  `.create()`, `.update()`, `bulk_create`, `bulk_update`, `get_or_create`,
  `update_or_create`) only in a writer module — services, storage modules, triggers,
  management commands and the writers DESIGN.md's layout names.
- Habit 2, "Raw statements … live in `storage.py` modules": a cursor, `.execute()`, `.raw()`,
  `.extra()`, `RawSQL` and SQL text only in `storage.py` and `*_storage.py` modules,
  `triggers.py` modules and migrations.
- Habit 1 with "Storage, concurrency and scale" ("speed devices … never inside the pure
  core"): the pure core keeps no cache — no `functools.lru_cache` or `functools.cache`, no
  module-level dict, list or set filled by a function — and does not touch the collector.

Each rule has a short allowlist; every entry says why it stands."""

from __future__ import annotations

import ast
import re
import tomllib

import pytest

from tests.test_layers import MODULES, ROOT

# ---------------------------------------------------------------------------------------------
# Services are the only writers (habit 2)

# Writers that DESIGN.md's layout names outside `services`, `storage` and `triggers` modules.
NAMED_WRITERS = {
    "config.portability": "the merge by id every app's part of an import writes with (SPEC §9)",
    "events.outbox": "writes the events in the change's transaction (SPEC §14)",
    "events.delivery": "the dispatcher: positions, lanes, deliveries and attempts (V3)",
    "events.webhooks": "registers and changes webhook endpoints (V3)",
    "memory.forgetting": "memory's writer of F1–F4",
    "memory.deletion": "memory's writer of what a deleted conversation or user takes",
    "memory.withholding": "memory's writer of F6 and F7.2, the holds a forget writes",
    "memory.portability.imports": "memory's part of an import writes the file's rows (§9)",
    "policy.media_jobs": "policy's writer of D9, the media jobs",
    "support.reveals": "opens, extends, closes and logs a reveal (SPEC §13)",
    "turns.replies": "commits each reply once (I4)",
    "turns.turn_path": "the one turn path: read once, decide, write once",
    "turns.portability.imports": "a user's import (§9)",
    "turns.demo": "the demo data `manage.py load_demo` writes",
}

# Modules outside the writers that write all the same, and why.
WRITES_ALLOWED = {
    "config.models": "`ApiToken.issue`, the one way a token is made: the raw secret hashed "
    "beside its new row, for `manage.py create_api_token` and the suite's fixtures",
    "config.credentials": "the token check stamps `last_used_at`, at most once an interval: "
    "bookkeeping no rule reads, before any view runs",
    "agents.credentials": "the connection's token check stamps `last_used_at` the same way",
}

WRITE_METHODS = {
    "save",
    "delete",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
}
# `.create()` and `.update()` are writes on a manager or a queryset only (dicts and sets update).
ORM_WRITE_METHODS = {"create", "update"}
ORM_ATTRIBUTES = {"objects", "_default_manager", "_base_manager"}
QUERYSET_METHODS = {
    "all",
    "filter",
    "exclude",
    "select_for_update",
    "select_related",
    "prefetch_related",
    "annotate",
    "order_by",
    "using",
    "only",
    "defer",
}
# An admin action's parameter is a queryset.
QUERYSET_PARAMETERS = {"queryset", "qs"}


def is_writer(name: str) -> bool:
    parts = name.split(".")
    last = parts[-1]
    return (
        "services" in parts
        or last in ("storage", "triggers")
        or last.endswith("_storage")
        or "commands" in parts
        or name in NAMED_WRITERS
    )


def _is_orm(node: ast.expr, names: set[str]) -> bool:
    """Whether `node` is a manager or a queryset: `X.objects…`, a queryset method's result,
    or a name bound to one."""
    while True:
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Attribute):
            if node.attr in ORM_ATTRIBUTES:
                return True
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in QUERYSET_METHODS:
                return True
            node = node.func.value
        else:
            return False


def _orm_names(tree: ast.AST) -> set[str]:
    names = set(QUERYSET_PARAMETERS)
    for _ in range(2):  # a name bound to a queryset built from another one
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _is_orm(node.value, names):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def model_writes(source: str) -> list[str]:
    """The model writes of `source`, as `line: call`. `super().save()` and `super().delete()`
    are a model's own override handing on to Django, not a write of their own."""
    tree = ast.parse(source)
    names = _orm_names(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, target = node.func.attr, node.func.value
        if isinstance(target, ast.Call) and getattr(target.func, "id", None) == "super":
            continue
        if method in WRITE_METHODS or (method in ORM_WRITE_METHODS and _is_orm(target, names)):
            found.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return found


def test_it_tells_a_model_write_from_a_dict_update():
    source = (
        "def revoke(self, request, queryset):\n"
        "    queryset.filter(revoked_at=None).update(revoked_at=1)\n"
        "    stale = Token.objects.filter(used=None)\n"
        "    stale.update(used=1)\n"
        "    Token.objects.create(name='x')\n"
        "    token.save()\n"
        "    body = {}\n"
        "    body.update(detail='x')\n"
        "    seen.update(ids)\n"
        "    super().save()\n"
    )
    assert model_writes(source) == [
        "2: queryset.filter(revoked_at=None).update",
        "4: stale.update",
        "5: Token.objects.create",
        "6: token.save",
    ]


def test_it_finds_model_writes_only_in_the_writers():
    """Habit 2: nothing but a service writes — pages, API views, the admin, selectors and
    the pure core call one. An admin's action or `save_model` calls the service too."""
    stray = {
        name: found
        for name, path in sorted(MODULES.items())
        if not is_writer(name) and name not in WRITES_ALLOWED
        if (found := model_writes(path.read_text(encoding="utf-8")))
    }
    assert stray == {}


def test_it_names_writers_and_exceptions_that_are_there():
    """Each named writer is a module; each allowed exception still writes (else its entry
    goes)."""
    assert set(NAMED_WRITERS) <= set(MODULES)
    still = {n for n in WRITES_ALLOWED if model_writes(MODULES[n].read_text(encoding="utf-8"))}
    assert still == set(WRITES_ALLOWED)


# ---------------------------------------------------------------------------------------------
# Raw SQL only in the storage modules (habit 2)

SQL_ALLOWED = {
    "config.catalog": "the catalog's triggers are migration operations (`CatalogTriggers`), "
    "and its version read runs in the module migrations import while models load",
}
# Calls named like a statement's that send none.
NOT_SQL = {"pipe.execute": "a Redis pipeline's commands (`config.throttle.RedisStore`)"}

# A string that begins as a statement does. The keyword in any case, but prose that begins
# with the same words ("Delete a conversation", "With Captain Rowan", "Select this object")
# is not a statement: SELECT is written in capitals or followed by a FROM, UPDATE by a table
# and SET, INSERT by INTO, DELETE by FROM, WITH by a name and AS (.
SQL_TEXT = re.compile(
    r"\s*(?:(?-i:SELECT)\s|SELECT\s.*\bFROM\b|INSERT\s+INTO\s|UPDATE\s+\S+\s+(?:\w+\s+)?SET\s"
    r"|DELETE\s+FROM\s|WITH\s+(?:RECURSIVE\s+)?\w+(?:\s*\([^)]*\))?\s+AS\s*(?:NOT\s+)?"
    r"(?:MATERIALIZED\s*)?\()",
    re.IGNORECASE | re.DOTALL,
)
SQL_CALLS = {"cursor", "execute", "executemany", "raw", "extra"}


def _text(node: ast.AST) -> str | None:
    """The text a string expression begins with: a literal, an f-string (each value as `x`),
    or a literal with something added."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _text(node.left)
        return None if left is None else left + "x"
    return None


def raw_sql(source: str) -> list[str]:
    """The raw SQL of `source`, as `line: what`: cursors, `.execute()`, `.raw()`, `.extra()`,
    `RawSQL(…)` and SQL text."""
    tree = ast.parse(source)
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in SQL_CALLS
                and ast.unparse(func) not in NOT_SQL
            ) or (isinstance(func, ast.Name) and func.id == "RawSQL"):
                found.append(f"{node.lineno}: {ast.unparse(func)}()")
        elif id(node) not in parts and (text := _text(node)) is not None:
            if SQL_TEXT.match(text):
                found.append(f"{node.lineno}: {text.strip()[:40]!r}")
    return sorted(set(found), key=lambda f: int(f.partition(":")[0]))


def sql_home(name: str) -> bool:
    last = name.rpartition(".")[2]
    return last in ("storage", "triggers") or last.endswith("_storage")


def test_it_tells_sql_from_prose():
    source = (
        'a = "SELECT 1"\n'
        'b = f"UPDATE {table} SET seq = seq + 1 WHERE id = %s"\n'
        'c = "select id from t"\n'
        'd = "WITH claimed AS (UPDATE t SET x = 1 RETURNING id) SELECT id FROM claimed"\n'
        'e = "SELECT " + ", ".join(parts)\n'
        'f = "Delete a conversation"\n'
        'g = f"With {name}"\n'
        'h = "Select this object for an action"\n'
        'i = ("INSERT", "UPDATE", "DELETE")\n'
        'j = "DELETE /users/{user}: erase everything"\n'
        "with connection.cursor() as cursor:\n"
        "    cursor.execute(sql)\n"
        "k = Event.objects.extra(where=[w])\n"
        "l = RawSQL(HORIZON, [])\n"
    )
    source += "pipe.execute()\n"
    assert sorted({int(f.partition(":")[0]) for f in raw_sql(source)}) == [
        1,
        2,
        3,
        4,
        5,
        11,
        12,
        13,
        14,
    ]


def test_it_finds_raw_sql_only_in_the_storage_modules():
    """Habit 2: statements live in `storage.py` and `*_storage.py` (and triggers and
    migrations), apart from the rules; a selector, a service or a page module calls one of
    their functions and never writes SQL of its own."""
    stray = {
        name: found
        for name, path in sorted(MODULES.items())
        if not sql_home(name) and name not in SQL_ALLOWED
        if (found := raw_sql(path.read_text(encoding="utf-8")))
    }
    assert stray == {}


def test_it_allows_raw_sql_only_where_it_still_is():
    still = {n for n in SQL_ALLOWED if raw_sql(MODULES[n].read_text(encoding="utf-8"))}
    assert still == set(SQL_ALLOWED)


# ---------------------------------------------------------------------------------------------
# No cache in the pure core (habit 1; "Storage, concurrency and scale")


def pure_core() -> list[str]:
    """The modules of the import-linter contract "The pure core imports only the standard
    library", a package with its modules."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"] == "The pure core imports only the standard library"
    ]
    roots = contract["source_modules"]
    return sorted(m for m in MODULES if any(m == r or m.startswith(f"{r}.") for r in roots))


PURE = pure_core()

# Module-level state of the pure core that stands, by module: (its name, why).
CACHE_ALLOWED = {
    "config.builders": (
        "_SLOTTED",
        "each slots dataclass's setters, keyed by the class: the code's shape, the same in "
        "every call, never a value",
    ),
}
CACHES = {"lru_cache", "cache"}
MUTATORS = {
    "append",
    "extend",
    "insert",
    "update",
    "setdefault",
    "add",
    "pop",
    "popitem",
    "clear",
    "remove",
    "discard",
}
MUTABLE = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"}


def _mutable(value: ast.expr | None) -> bool:
    if isinstance(value, MUTABLE):
        return True
    return isinstance(value, ast.Call) and (
        getattr(value.func, "id", None) in MUTABLE_CALLS
        or getattr(value.func, "attr", None) in MUTABLE_CALLS
    )


def caches(source: str) -> list[str]:
    """What in `source` keeps values across calls, as `line: what`: `functools.lru_cache` or
    `functools.cache`, an import of `gc`, and a module-level dict, list or set that a function
    changes. `functools.cached_property` is not among them: on an immutable value object
    (`memory.current.ContextState.by_slot`) it is a lazy view of that one object, gone with
    it, never shared across calls."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = getattr(node, "module", None)
            for alias in node.names:
                if alias.name == "gc" or (module == "gc"):
                    found.append(f"{node.lineno}: import gc")
                if module == "functools" and alias.name in CACHES:
                    found.append(f"{node.lineno}: functools.{alias.name}")
        elif isinstance(node, ast.Attribute) and node.attr in CACHES:
            if getattr(node.value, "id", None) == "functools":
                found.append(f"{node.lineno}: functools.{node.attr}")
    shared = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _mutable(node.value):
            shared.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and _mutable(node.value):
            shared.update([node.target.id] if isinstance(node.target, ast.Name) else [])
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                found += [f"{node.lineno}: global {n}" for n in node.names if n in shared]
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                for target in getattr(node, "targets", None) or [node.target]:
                    if isinstance(target, ast.Name):
                        local.add(target.id)
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                name = getattr(node.value, "id", None)
                if name in shared and name not in local:
                    found.append(f"{node.lineno}: {name}[…] =")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATORS
            ):
                name = getattr(node.func.value, "id", None)
                if name in shared and name not in local:
                    found.append(f"{node.lineno}: {name}.{node.func.attr}()")
    return sorted(set(found), key=lambda f: int(f.partition(":")[0]))


def test_it_tells_a_cache_from_a_lazy_view():
    source = (
        "import gc\n"
        "from functools import cached_property, lru_cache\n"
        "SEEN = {}\n"
        "ORDER = ('a', 'b')\n"
        "@lru_cache\n"
        "def zones():\n"
        "    return 1\n"
        "def remember(key, value):\n"
        "    SEEN[key] = value\n"
        "def rows(seen):\n"
        "    seen.update(x=1)\n"
        "    SEEN.get(1)\n"
        "class State:\n"
        "    @cached_property\n"
        "    def by_slot(self):\n"
        "        return {}\n"
    )
    assert caches(source) == ["1: import gc", "2: functools.lru_cache", "9: SEEN[…] ="]


def test_it_finds_the_pure_core():
    assert {"memory.domain", "memory.extract.rules", "config.builders", "turns.planner"} <= set(
        PURE
    )


@pytest.mark.parametrize("name", PURE)
def test_it_keeps_no_cache_in_the_pure_core(name):
    """The pure core is a function of its arguments: what is worth keeping across requests
    is kept by the shell that calls it, with the invalidation every worker sees (and F7.6:
    keyed by ids and versions, never by text); pausing the collector is a speed device of
    the request boundary (`config.storage.gc_paused`)."""
    allowed = CACHE_ALLOWED.get(name, ("", ""))[0]
    found = caches(MODULES[name].read_text(encoding="utf-8"))
    assert [f for f in found if not (allowed and f.split(": ", 1)[1].startswith(allowed))] == []


def test_it_allows_module_state_only_where_it_still_is():
    for name, (state, _) in CACHE_ALLOWED.items():
        found = caches(MODULES[name].read_text(encoding="utf-8"))
        assert any(f.split(": ", 1)[1].startswith(state) for f in found), name
