"""Bulk builders for the request boundary: building many frozen objects at once.

Standard library only, so the pure modules may use `build_slotted` too; it changes how fast
objects are built, never what is built. Pausing the collector while a request builds objects
it keeps is the shell's (`config.storage.gc_paused`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import fields as dataclass_fields
from itertools import repeat

__all__ = ["build_slotted"]

_new_object = object.__new__
_SLOTTED: dict[type, dict | None] = {}


def _slot_setters(cls) -> dict | None:
    """The slot setters of a slots dataclass whose instances can be built field by field
    exactly as its generated `__init__` would build them (every field set through
    `__init__`, no `__post_init__`), or None."""
    if cls not in _SLOTTED:
        setters = None
        params = getattr(cls, "__dataclass_params__", None)
        if params is not None and params.init and not hasattr(cls, "__post_init__"):
            fields = dataclass_fields(cls)
            names = tuple(f.name for f in fields)
            if all(f.init for f in fields) and getattr(cls, "__slots__", None) == names:
                setters = {
                    name: getattr(getattr(cls, name, None), "__set__", None) for name in names
                }
                if None in setters.values():
                    setters = None
        _SLOTTED[cls] = setters
    return _SLOTTED[cls]


def build_slotted(cls, columns: Mapping[str, Iterable], n: int) -> list:
    """`n` instances of the dataclass `cls`, field values given column by column (one
    iterable per field, every field given), equal to `cls(**fields)` for each row.

    A frozen dataclass's generated `__init__` makes one `object.__setattr__` call per field,
    which made construction the largest cost of reading a user's records. For a slots
    dataclass that only stores its fields, each column is stored through its slot descriptor
    in C, with no Python frame per instance; any other class is constructed normally."""
    setters = _slot_setters(cls)
    if setters is None or set(columns) != set(setters):
        names = list(columns)
        return [
            cls(**dict(zip(names, row, strict=True)))
            for row in zip(*columns.values(), strict=False)
        ]
    objects = list(map(_new_object, repeat(cls, n)))
    for name, column in columns.items():
        deque(map(setters[name], objects, column), maxlen=0)
    return objects
