"""What every app's part of an import shares (SPEC §9): the file's rows read section by
section, new rows created in bulk, and the merge by id that skips a stored row with the same
content and refuses one with other content (`import_conflict`, nothing imported). A section
merged by id is declared once (`Section`), beside its exporter, and the export and the import
both read that declaration.

The turn's orchestration (`turns.portability.imports`) writes the conversation's and the
policy's sections through it, memory (`memory.portability.imports`) its own: each app copies
its tables itself, and all of them count into the one answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from .errors import ImportConflict


def text_or_none(value) -> str | None:
    return None if value is None else str(value)


def conflict(what: str, ident) -> ImportConflict:
    return ImportConflict(f"{what} {ident} exists with other content; nothing was imported.")


@dataclass(frozen=True)
class Section:
    """One section of the export file (SPEC §9) that an import merges by id: the file's key
    (`name`), its rows' `model`, how a message names one row (`what`), and its mapping both
    ways.

    - `row`: a stored row as the file holds it. The export writes it; the import compares a
      stored row with the file's through it, without the fields in `not_compared` (what an
      import adds to rather than compares, or bookkeeping that is not content) and through
      `same`, if given (answers the two dicts to compare).
    - `fields` and `others`: a new row from the file's. `fields` are those the file names as
      the model does (space-separated; an optional one the file leaves out is None);
      `others(v, c, rows)` the rest, named otherwise or derived, from the validated row, its
      canonical form and the import (`RowImport`)."""

    name: str
    model: type
    what: str
    row: Callable[..., dict]
    fields: str
    others: Callable[[dict, dict, RowImport], dict]
    not_compared: tuple[str, ...] = ()
    same: Callable[[object, dict, dict], tuple[dict, dict]] | None = None

    def compared(self, row, mine: dict, theirs: dict) -> tuple[dict, dict]:
        """The stored row's dict and the file's, as the merge compares them."""
        mine = {k: v for k, v in mine.items() if k not in self.not_compared}
        theirs = {k: v for k, v in theirs.items() if k not in self.not_compared}
        return (mine, theirs) if self.same is None else self.same(row, mine, theirs)


class RowImport:
    """The write half of an import: every row already passed the file's validation. `v` holds
    the validated rows (Python values), `c` their canonical form (what the export writes);
    `user` is the user the rows are imported for, once it is known; `characters` the catalog's
    characters the rows name, by slug, and `slugs` their slugs by id, once the file's
    characters are imported."""

    def __init__(self, validated: dict, canonical: dict):
        self.v, self.c = validated, canonical
        self.counts = {"created": 0, "skipped": 0}
        self.user = None
        self.characters: dict = {}
        self.slugs: dict = {}

    def rows(self, section: str):
        return list(zip(self.v[section], self.c[section], strict=True))

    def new_row(self, model, v: dict, same_names: str, /, **others):
        """A new row of `model` for the import's user, from the file's validated row `v`: the
        fields in `same_names` (space-separated) the file names as the model does — an
        optional one the file leaves out is None — and `others`, those it names otherwise or
        that are derived."""
        copied = {name: v.get(name) for name in same_names.split()}
        return model(user=self.user, **copied, **others)

    def create(self, model, objects: list, what: str) -> None:
        """New rows in bulk; a unique constraint that a stored row already holds is a conflict."""
        if not objects:
            return
        try:
            with transaction.atomic():
                model.objects.bulk_create(objects, batch_size=500)
        except IntegrityError:
            raise ImportConflict(
                f"A {what} of the snapshot collides with a stored one; nothing was imported."
            ) from None
        self.counts["created"] += len(objects)

    def merge(self, section: Section, *context) -> list:
        """A section's rows by id: a stored row of this user with the same content is skipped;
        one with other content, or another user's, is a conflict; the rest are created.
        `context` is what the section's `row` takes besides the stored row (the characters'
        slugs …). Answers the rows created."""
        rows = self.rows(section.name)
        stored = section.model.objects.in_bulk([v["id"] for v, _ in rows])
        new = []
        for v, c in rows:
            row = stored.get(v["id"])
            if row is None:
                others = section.others(v, c, self)
                new.append(self.new_row(section.model, v, section.fields, **others))
                continue
            mine, theirs = section.compared(row, section.row(row, *context), dict(c))
            if getattr(row, "user_id", None) != self.user.pk or mine != theirs:
                raise conflict(section.what, v["id"])
            self.counts["skipped"] += 1
        self.create(section.model, new, section.what)
        return new
