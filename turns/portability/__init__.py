"""Export and import of one user's data (SPEC §9): the export file, one JSON object of format
`companion-memory/3` that holds everything that is the user's. ("Snapshot" elsewhere means a
turn's stored plan, `conversations.plan_snapshot`; the export file's schema components keep
the names `Snapshot`, `SnapshotInput` and `SnapshotUserInput`, which the API's contract and the
generated clients spell.)

- `export`: the file written, one exporter per section.
- `imports`: the file validated whole, then written in one transaction, idempotently.
- `shape`: the file's shape, validated with the API's own fields and rules.
- `references`: what spans the file's rows (unique ids, references, the F6 and F7.2 links).
- `rows`: the conversation's and the policy's rows as the file holds them, each with its
  section's declaration (`config.portability.Section`), shared by export and import. Memory's
  rows are read and written by memory itself (`memory.portability`).
- `import_events`: the events (V1) of what an import created."""

from .export import user_export
from .imports import user_import
from .references import FORMAT

__all__ = ["FORMAT", "user_export", "user_import"]
