"""Bulk builders for the request boundary (config.builders): they change how fast objects are
built, never what is built. No database."""

from __future__ import annotations

from dataclasses import dataclass, field

from config.builders import build_slotted
from conversations.scopes import Scope
from memory.domain import Exclusion, MemoryRecord
from tests.memory.core.records import rec


def test_it_builds_frozen_slots_records_equal_to_their_constructor():
    """R7 input: a record built column by column is equal to (and reprs like) the same
    record built by its constructor, with every field in place."""
    records = [
        rec("a"),
        rec(
            "b",
            key="user.likes",
            value="Jazz",
            vu=3,
            since=1,
            status="expired",
            supersedes="a",
            scope=Scope("character", character="x"),
        ),
    ]
    names = list(MemoryRecord.__dataclass_fields__)
    columns = {name: [getattr(r, name) for r in records] for name in names}
    built = build_slotted(MemoryRecord, columns, len(records))
    assert built == records
    assert [repr(r) for r in built] == [repr(r) for r in records]
    assert all(type(r) is MemoryRecord for r in built)
    assert build_slotted(Exclusion, {"id": [], "reason": []}, 0) == []


@dataclass(frozen=True)
class _Plain:
    a: int
    b: list = field(default_factory=list)

    def __post_init__(self):
        object.__setattr__(self, "b", [*self.b, self.a])


def test_it_builds_any_other_class_through_its_constructor():
    """A class the slot path cannot build exactly (no slots, a __post_init__) is built
    normally, so the result is still what the constructor gives."""
    assert build_slotted(_Plain, {"a": [1, 2], "b": [[0], []]}, 2) == [_Plain(1, [0]), _Plain(2)]
    assert build_slotted(_Plain, {"a": [1, 2], "b": [[0], []]}, 2)[0].b == [0, 1]
