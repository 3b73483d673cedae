"""What every app's part of an import shares (SPEC §9): the file's rows read section by
section, new rows created in bulk, and the merge by id that skips a stored row with the same
content and refuses one with other content (`import_conflict`, nothing imported).

The turn's orchestration (`turns.portability.imports`) writes the conversation's and the
policy's sections through it, memory (`memory.portability.imports`) its own: each app copies
its tables itself, and all of them count into the one answer."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from .errors import ImportConflict


def text_or_none(value) -> str | None:
    return None if value is None else str(value)


def conflict(what: str, ident) -> ImportConflict:
    return ImportConflict(f"{what} {ident} exists with other content; nothing was imported.")


class RowImport:
    """The write half of an import: every row already passed the file's validation. `v` holds
    the validated rows (Python values), `c` their canonical form (what the export writes);
    `user` is the user the rows are imported for, once it is known."""

    def __init__(self, validated: dict, canonical: dict):
        self.v, self.c = validated, canonical
        self.counts = {"created": 0, "skipped": 0}
        self.user = None

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

    def merge(self, model, section: str, what: str, *, as_dict, build, same=None) -> list:
        """Rows by id: a stored row of this user with the same content is skipped; one with
        other content, or another user's, is a conflict; the rest are created."""
        rows = self.rows(section)
        stored = model.objects.in_bulk([v["id"] for v, _ in rows])
        new = []
        for v, c in rows:
            row = stored.get(v["id"])
            if row is None:
                new.append(build(v, c))
                continue
            mine, theirs = as_dict(row), dict(c)
            if same is not None:
                mine, theirs = same(row, mine, theirs)
            if getattr(row, "user_id", None) != self.user.pk or mine != theirs:
                raise conflict(what, v["id"])
            self.counts["skipped"] += 1
        self.create(model, new, what)
        return new
