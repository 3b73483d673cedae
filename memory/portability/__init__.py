"""Memory's part of export and import (SPEC §9): memory copies its own tables. The export file
and the import's order are the turn's (`turns.portability`), which asks here for the user's
memory rows and hands here the file's, and never reaches memory's tables itself.

- `export`: the user's memory rows as the export file holds them (`memory_export`).
- `imports`: an import's memory rows written, step by step in its one transaction.
- `rows`: each memory row as the file holds it, with its section's declaration, shared by
  export and import, and the profile's part of the user object."""

from .export import MemoryExport, memory_export
from .imports import (
    bookkeeping_import,
    keys_import,
    memories_import,
    profile_import,
    tombstones_apply,
)
from .rows import memory_scope_id

__all__ = [
    "MemoryExport",
    "bookkeeping_import",
    "keys_import",
    "memories_import",
    "memory_export",
    "memory_scope_id",
    "profile_import",
    "tombstones_apply",
]
