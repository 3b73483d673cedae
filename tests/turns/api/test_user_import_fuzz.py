"""SPEC §9 and §10 "never a 500 for bad input": a valid snapshot (a user with every kind of
row) mutated field by field — impossible and extreme times, huge integers, NUL and lone
surrogates, nulls (inside lists too), wrong types, unknown fields, duplicates, dangling
references, refs and slugs that `PUT` refuses — answers 400 or 409, never a 500; and after any
import it accepts, every read of that user still answers.

By default every field of the first row of each section gets every mutation of its class;
`SNAPSHOT_FUZZ=full` mutates every row (the figures in SECURITY.md come from that run)."""

from __future__ import annotations

import copy
import json
import os
from collections import Counter

import pytest

from tests.turns.api.snapshot_world import build_every_kind, reads_answer

pytestmark = [pytest.mark.django_db, pytest.mark.fuzz, pytest.mark.slow]

FULL = os.environ.get("SNAPSHOT_FUZZ") == "full"
DANGLING = "00000000-0000-4000-8000-000000000000"
TIME_FIELDS = (
    "_at",
    "valid_from",
    "valid_until",
    "status_since",
    "evidence_time",
    "date_joined",
    "blocks_sources_before",
)

MUTATIONS = {
    "impossible-time": [
        "2026-02-30T00:00:00Z",
        "2026-01-01T00:00:00+99:00",
        "2026-13-01T00:00:00Z",
        "yesterday",
    ],
    "extreme-time": [
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999999Z",
    ],
    "huge-integer": [2**63, 2**64, 10**30, 2**31, -1],
    "nul": ["a\x00b"],
    "lone-surrogate": ["\ud800", "a\udfffb"],
    "null": [None],
    "wrong-type": [7, 1.5, True, [], {}, "text"],
    "dangling-reference": [DANGLING, "nobody"],
    "refused-ref-or-slug": ["evil user <b>", "a/b", "", "x" * 300],
}


# Without SNAPSHOT_FUZZ=full, the first values of each class (every time value is kept).
if not FULL:
    MUTATIONS = {
        cls: values if cls.endswith("time") else values[:3] for cls, values in MUTATIONS.items()
    }
    MUTATIONS["refused-ref-or-slug"] = ["evil user <b>"]  # neither a user ref nor a slug
    MUTATIONS["dangling-reference"] = [DANGLING]


def is_time(name: str) -> bool:
    return name.endswith(TIME_FIELDS)


def leaves(value, path=()):
    """(path, value) of every leaf and every list of the snapshot."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        yield path, value
        for i, item in enumerate(value):
            if FULL or i == 0 or not isinstance(item, dict):
                yield from leaves(item, (*path, i))
    else:
        yield path, value


def mutations_for(path, value):
    """The mutation classes that fit a field (all fields get null, wrong types, NUL and lone
    surrogates)."""
    name = str(path[-1]) if path else ""
    classes = ["null", "wrong-type"]
    if isinstance(value, list):
        yield "null-in-list", [*value, None]
        if value:
            yield "null-in-list", [None]
        return
    if isinstance(value, str) or value is None:
        classes += ["nul", "lone-surrogate"]
        if is_time(name):
            classes += ["impossible-time", "extreme-time"]
        else:
            classes += ["dangling-reference", "refused-ref-or-slug"]
    if isinstance(value, int) and not isinstance(value, bool):
        classes.append("huge-integer")
    for cls in classes:
        for replacement in MUTATIONS[cls]:
            if replacement != value:
                yield cls, replacement


def set_path(snapshot, path, value):
    target = snapshot
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value


def structural(snapshot):
    """Mutations of shape: unknown fields, object keys that are lone surrogates, duplicated
    rows, rows of another user's scope."""
    for section, rows in snapshot.items():
        if isinstance(rows, list) and rows and isinstance(rows[0], dict):
            for cls, mutate in (
                ("unknown-field", lambda rows: rows[0].update(zzz=1)),
                ("lone-surrogate", lambda rows: rows[0].update({"\ud800": 1})),
                ("duplicate", lambda rows: rows.append(copy.deepcopy(rows[0]))),
                ("wrong-type", lambda rows: rows.append("row")),
            ):
                yield cls, (section,), mutate
    yield "unknown-field", ("user",), lambda user: user.update(zzz=1)
    yield "lone-surrogate", ("user",), lambda user: user.update({"\ud800": "x"})


@pytest.fixture
def unthrottled(monkeypatch):
    from config.api import RuntimeThrottle

    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {})


def test_it_never_answers_a_mutated_snapshot_with_a_500(api, unthrottled):
    w = build_every_kind(api, "fuzzed")
    exported = json.dumps(api.get(f"/api/v1/users/{w.ref}/export").json())
    snapshot = json.loads(exported)
    assert api.delete(f"/api/v1/users/{w.ref}").status_code == 204

    tried: Counter = Counter()
    outcomes: Counter = Counter()
    accepted = 0

    def attempt(cls, mutated):
        nonlocal accepted
        # ensure_ascii: lone surrogates travel as \\ud800 escapes, as a client would send them.
        body = json.dumps(mutated, ensure_ascii=True)
        r = api.post(f"/api/v1/users/{w.ref}/import", data=body, content_type="application/json")
        tried[cls] += 1
        outcomes[r.status_code] += 1
        assert r.status_code in (200, 400, 409), (cls, r.status_code, r.content[:500])
        assert r["Content-Type"] == (
            "application/json" if r.status_code == 200 else "application/problem+json"
        )
        if r.status_code == 200:
            accepted += 1
            reads_answer(api, w.ref)
            assert api.delete(f"/api/v1/users/{w.ref}").status_code == 204
        elif r.status_code == 400:
            assert r.json()["code"] == "validation_error" and r.json()["errors"]

    for path, value in list(leaves(snapshot)):
        if path in (("format",), ("user", "ref")):
            continue  # the snapshot of another user or format: refused before any field
        for cls, replacement in mutations_for(path, value):
            mutated = json.loads(exported)  # a fresh copy, faster than deepcopy
            set_path(mutated, path, replacement)
            attempt(cls, mutated)
    for cls, path, mutate in structural(snapshot):
        mutated = json.loads(exported)  # a fresh copy, faster than deepcopy
        target = mutated
        for step in path:
            target = target[step]
        mutate(target)
        attempt(cls, mutated)

    print(
        "\nsnapshot fuzz: inputs per class",
        dict(sorted(tried.items())),
        "answers",
        dict(outcomes),
        "accepted",
        accepted,
    )
    assert outcomes[400] > 500 and accepted > 0
