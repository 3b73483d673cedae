"""The suite's turn and concurrency tests once more, through a PgBouncer in transaction pooling
that the tests start on loopback (docs/DECISIONS.md, "PgBouncer in transaction pooling").

Each module here names the module whose tests it runs again (`rerun`); its conftest starts
the pooler in front of the test database and points the default connection through it, with
the settings `DATABASE_POOLER=pgbouncer` gives (config.pooler), for the module's tests only."""

from __future__ import annotations

import importlib


def rerun(namespace: dict, module: str) -> None:
    """Collect `module`'s tests, fixtures and marks (and its directory's conftest fixtures)
    again in the module whose globals are `namespace`."""
    package = module.rsplit(".", 1)[0]
    sources = []
    try:
        sources.append(importlib.import_module(f"{package}.conftest"))
    except ModuleNotFoundError:
        pass
    sources.append(importlib.import_module(module))
    for source in sources:
        for name, value in vars(source).items():
            if not name.startswith("_") and name != "rerun":
                namespace[name] = value
    namespace["__doc__"] = f"{module}, through PgBouncer.\n\n{sources[-1].__doc__ or ''}"
