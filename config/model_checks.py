"""The database checks the apps' models repeat, said once: a column that holds one of a fixed
set of values (a status, an effect, who asked), refused by the table itself whoever writes the
row — a service, an import, raw SQL — not only by a form or a serializer."""

from django.db import models
from django.db.models import Q


def one_of(field: str, values, name: str, *, or_null: bool = False) -> models.CheckConstraint:
    """The CHECK that `field` holds one of `values` (or is null, with `or_null`)."""
    condition = Q(**{f"{field}__in": values})
    if or_null:
        condition = Q(**{f"{field}__isnull": True}) | condition
    return models.CheckConstraint(condition=condition, name=name)
