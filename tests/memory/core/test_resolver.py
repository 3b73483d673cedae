"""The pure resolver (SPEC §3 R1–R8) and E1's slot winner; W11 and W12 have their own files
(test_history.py, test_normalisation.py), this one keeps their linear cost on a long slot.

No database: records are built in memory (tests/memory/core/records.py)."""

from __future__ import annotations

import random

import pytest

from conversations.scopes import Scope
from memory import resolver as resolver_module
from memory.domain import RESOLVER_VERSION, value_hash
from memory.history import effective_ends
from memory.normalisation import apply_changes, plan_normalisation
from memory.resolver import resolve_slot
from tests.memory.core.records import (
    CHAR,
    CHAR_SCOPE,
    CONV,
    CONV_SCOPE,
    OTHER_CONV,
    SCENE_SCOPE,
    SECRET,
    USER,
    USER_SCOPE,
    at,
    ctx,
    outcome,
    rec,
    run,
    tomb,
)

# ---------------------------------------------------------------------------------------------
# R1 scope


@pytest.mark.parametrize(
    ("scope", "context", "expected"),
    [
        (USER_SCOPE, ctx(), "active"),
        (CHAR_SCOPE, ctx(), "active"),
        (Scope("character", character="other"), ctx(), "scope"),
        (CONV_SCOPE, ctx(), "active"),
        (Scope("conversation", conversation=OTHER_CONV), ctx(), "scope"),
        (SCENE_SCOPE, ctx(scene="greenhouse"), "active"),
        (SCENE_SCOPE, ctx(scene="downstairs"), "scope"),
        (SCENE_SCOPE, ctx(), "scope"),  # a context without a scene matches no scene record
        (
            Scope("scene", conversation=OTHER_CONV, scene="greenhouse"),
            ctx(scene="greenhouse"),
            "scope",
        ),
    ],
)
def test_it_matches_scopes_against_the_context(scope, context, expected):
    """R1: user / character / conversation / scene scopes match their part of the context;
    a scene record needs a context with that scene."""
    resolution = run([rec("a", scope=scope)], context=context)
    assert outcome(resolution) == {"a": expected}
    if expected == "scope":
        assert resolution.explain("a").step == "R1"


def test_it_excludes_another_users_record_by_scope():
    """R1: a user-scope record of another user never matches."""
    resolution = run([rec("a", user="bo")])
    assert outcome(resolution) == {"a": "scope"}


# ---------------------------------------------------------------------------------------------
# R2 stored forgotten


def test_it_excludes_a_stored_forgotten_record_before_looking_at_time():
    """R2 runs before R3: a forgotten record that is also not yet valid says forgotten."""
    resolution = run([rec("a", status="forgotten", since=1, vf=200, value="")])
    assert outcome(resolution) == {"a": "forgotten"}
    assert resolution.explain("a").step == "R2"


def test_it_lets_the_older_value_back_when_the_correction_is_forgotten():
    """R2 then R5: a forgotten correction did not pass R1–R4, so it hides nothing."""
    records = [
        rec("a"),
        rec("b", vf=1, version=2, supersedes="a", status="forgotten", since=5, value=""),
    ]
    assert outcome(run(records)) == {"a": "active", "b": "forgotten"}


# ---------------------------------------------------------------------------------------------
# R3 time


@pytest.mark.parametrize(
    ("kwargs", "now", "expected"),
    [
        ({"vf": 5}, 4, "not-yet-valid"),
        ({"vf": 5}, 5, "active"),  # valid_from is inclusive
        ({"vf": 0, "vu": 5}, 4.9, "active"),
        ({"vf": 0, "vu": 5}, 5, "expired"),  # valid_until is exclusive
        ({"vf": 5, "vu": 5}, 5, "expired"),  # an empty window (W10) is never current
        ({"vf": 5, "vu": 5}, 4, "not-yet-valid"),
        ({"status": "expired", "since": 3}, 3, "expired"),
        ({"status": "expired", "since": 3}, 2, "active"),  # marked, but not in force yet
    ],
)
def test_it_applies_the_valid_time_window(kwargs, now, expected):
    """R3: valid_from > now → not-yet-valid; valid_until <= now, or stored expired with
    status_since <= now → expired."""
    resolution = run([rec("a", **kwargs)], now=now)
    assert outcome(resolution) == {"a": expected}
    if expected != "active":
        assert resolution.explain("a").step == "R3"


# ---------------------------------------------------------------------------------------------
# R4 tombstones (F3)


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        (2, "forgotten"),  # last week's messages, written today: blocked
        (10, "forgotten"),  # evidence at the very moment of the forget: blocked
        (11, "active"),  # the user said it again after the forget
    ],
)
def test_it_blocks_by_tombstone_only_evidence_no_newer_than_the_forget(evidence, expected):
    """R4/F3: blocked when evidence_time <= blocks_sources_before, not when newer."""
    resolution = run([rec("a", vf=12, evidence=evidence)], tombstones=[tomb("t1", before=10)])
    assert outcome(resolution) == {"a": expected}
    if expected == "forgotten":
        assert resolution.explain("a").step == "R4"
        assert "t1" in resolution.explain("a").detail


def test_it_blocks_every_scope_with_a_star_tombstone():
    """R4/F1: scope `*` covers the key in every scope of the user."""
    records = [
        rec("u"),
        rec("c", scope=CHAR_SCOPE),
        rec("v", scope=CONV_SCOPE),
        rec("other-key", key="dog.name"),
    ]
    resolution = run(records, tombstones=[tomb("t1", scope_id="*")])
    assert outcome(resolution) == {
        "u": "forgotten",
        "c": "forgotten",
        "v": "forgotten",
        "other-key": "active",
    }


def test_it_ignores_tombstones_of_another_scope_or_user():
    """R4/F3: the tombstone must name the record's scope id (or `*`) and user."""
    records = [rec("u"), rec("c", scope=CHAR_SCOPE)]
    tombstones = [
        tomb("t1", scope_id=f"character:{USER}:{CHAR}"),
        tomb("t2", scope_id="*", user="bo"),
    ]
    assert outcome(run(records, tombstones=tombstones)) == {"u": "active", "c": "forgotten"}


def test_it_blocks_only_the_forgotten_value_of_a_many_key():
    """R4/F1: a value-level tombstone (HMAC of the normalised value) blocks that value slot
    only, whatever its case or surrounding spaces."""
    records = [
        rec("jazz", key="user.likes", value="Jazz"),
        rec("jazz2", key="user.likes", value="  JAZZ ", scope=CHAR_SCOPE),
        rec("rain", key="user.likes", value="rainy days"),
    ]
    tombstones = [tomb("t1", key="user.likes", scope_id="*", hashed=value_hash(SECRET, "jazz"))]
    assert outcome(run(records, tombstones=tombstones)) == {
        "jazz": "forgotten",
        "jazz2": "forgotten",
        "rain": "active",
    }


def test_it_hashes_values_only_when_a_tombstone_has_a_value_hash(monkeypatch):
    """R4: the HMAC is computed only when some tombstone for that key carries a hash."""

    def no_hashing(secret, value):
        raise AssertionError("value_hash must not be called")

    monkeypatch.setattr(resolver_module, "value_hash", no_hashing)
    resolution = run(
        [rec("a"), rec("b", key="dog.name")],
        tombstones=[tomb("t1", before=-1), tomb("t2", key="cat.name")],
    )
    assert outcome(resolution) == {"a": "active", "b": "active"}


def test_it_runs_tombstones_after_time():
    """R3 before R4: an expired record under a tombstone says expired."""
    resolution = run([rec("a", vu=5)], now=6, tombstones=[tomb("t1")])
    assert outcome(resolution) == {"a": "expired"}


# ---------------------------------------------------------------------------------------------
# R5 supersession


def test_it_keeps_only_the_last_version_of_a_correction_chain():
    """R5: in a chain v1 ← v2 ← v3 ← v4 only the last is active; each earlier one is
    superseded by the next, superseded or not (chains hold)."""
    records = [
        rec("v1"),
        rec("v2", vf=1, version=2, supersedes="v1"),
        rec("v3", vf=2, version=3, supersedes="v2"),
        rec("v4", vf=3, version=4, supersedes="v3"),
    ]
    resolution = run(records)
    assert outcome(resolution) == {
        "v1": "superseded",
        "v2": "superseded",
        "v3": "superseded",
        "v4": "active",
    }
    assert resolution.explain("v2").detail == "superseded by v3"


def test_it_brings_the_older_value_back_when_a_correction_expires():
    """R5/W9: a correction with its own valid_until hides what it corrects only inside its
    window; an expired correction no longer hides it."""
    records = [
        rec("old", value="Harbor"),
        rec("temp", value="Marlowe", vf=1, vu=3, version=2, supersedes="old"),
    ]
    assert outcome(run(records, now=2)) == {"old": "superseded", "temp": "active"}
    assert outcome(run(records, now=3)) == {"old": "active", "temp": "expired"}


def test_it_does_not_let_a_future_correction_hide_the_present_value():
    """R3 before R5: a correction that is not yet valid hides nothing."""
    records = [rec("old"), rec("new", vf=5, version=2, supersedes="old")]
    assert outcome(run(records, now=4)) == {"old": "active", "new": "not-yet-valid"}


def test_it_does_not_let_a_blocked_correction_hide_anything():
    """R4 before R5: a correction blocked by a tombstone (old evidence) did not pass R1–R4,
    while the record it corrects, with newer evidence, is not blocked."""
    records = [
        rec("said-again", vf=0, evidence=11),
        rec("stale", vf=1, version=2, evidence=3, supersedes="said-again"),
    ]
    resolution = run(records, tombstones=[tomb("t1", before=10)])
    assert outcome(resolution) == {"said-again": "active", "stale": "forgotten"}


@pytest.mark.parametrize(("since", "expected"), [(4, "superseded"), (6, "active")])
def test_it_honours_a_stored_superseded_status_from_its_time(since, expected):
    """R5: stored status superseded counts when status_since <= now."""
    resolution = run([rec("a", status="superseded", since=since)], now=5)
    assert outcome(resolution) == {"a": expected}


# ---------------------------------------------------------------------------------------------
# R6 precedence


@pytest.mark.parametrize(
    ("a", "b", "winner", "why"),
    [
        # W7: lower authority, newer value loses
        (
            {"authority": "user-corrected", "vf": 0},
            {"authority": "model-inferred", "vf": 5},
            "a",
            "higher authority",
        ),
        # W9: a late fact with an older valid_from loses even with a higher version
        ({"vf": 1, "version": 3}, {"vf": 2, "version": 1}, "b", "later valid_from"),
        ({"vf": 1, "version": 1}, {"vf": 1, "version": 2}, "b", "higher version"),
        # equal valid_from and version: the smaller id wins (deterministic tie-break)
        ({"vf": 1, "version": 1}, {"vf": 1, "version": 1}, "a", "smaller id"),
    ],
)
def test_it_ranks_authority_then_valid_time_then_version_then_id(a, b, winner, why):
    """R6: higher authority, then later valid_from, then higher version, then smaller id;
    the loser is lower-precedence and the explanation names the winner."""
    resolution = run([rec("a", **a), rec("b", **b)])
    loser = "b" if winner == "a" else "a"
    assert outcome(resolution) == {winner: "active", loser: "lower-precedence"}
    explanation = resolution.explain(loser)
    assert explanation.step == "R6"
    assert winner in explanation.detail and why in explanation.detail


def test_it_gives_each_value_slot_of_a_many_key_its_own_winner():
    """R6: for a many key each normalised value is its own slot."""
    records = [
        rec("jazz1", key="user.likes", value="Jazz", vf=0),
        rec("jazz2", key="user.likes", value=" jazz", vf=1),
        rec("rain", key="user.likes", value="rainy days"),
    ]
    assert outcome(run(records)) == {
        "jazz1": "lower-precedence",
        "jazz2": "active",
        "rain": "active",
    }


def test_it_keeps_one_winner_per_scoped_key_not_per_key():
    """R6 is per scoped key: the same key in two scopes gives two winners (P3 shadows)."""
    records = [rec("u"), rec("c", scope=CHAR_SCOPE, value="Max")]
    assert outcome(run(records)) == {"u": "active", "c": "active"}


# ---------------------------------------------------------------------------------------------
# R7 determinism


def _mixed_records():
    return [
        rec("v1"),
        rec("v2", vf=1, version=2, supersedes="v1"),
        rec("c1", scope=CHAR_SCOPE, authority="model-inferred", vf=3),
        rec("c2", scope=CHAR_SCOPE, authority="user-confirmed", vf=2, version=2),
        rec("f", key="dog.name", status="forgotten", since=1, value=""),
        rec("s", scope=SCENE_SCOPE),
        rec("l1", key="user.likes", value="Jazz"),
        rec("l2", key="user.likes", value="rain", vf=200),
    ]


def test_it_ignores_input_order_and_duplicates():
    """R7: every permutation (with duplicates) gives the same resolution."""
    records = _mixed_records()
    reference = run(records, tombstones=[tomb("t1", key="dog.name")])
    shuffler = random.Random(7)
    for _ in range(50):
        shuffled = records + records[:3]
        shuffler.shuffle(shuffled)
        again = run(shuffled, tombstones=[tomb("t1", key="dog.name")] * 2)
        assert again.active == reference.active
        assert again.excluded == reference.excluded
        assert again.trace == reference.trace
        assert again.explanations == reference.explanations


def test_it_orders_active_by_key_then_id_and_excluded_by_id():
    """R7: `active` by (key, id), `excluded` by id."""
    resolution = run(_mixed_records())
    assert [(r.key, r.id) for r in resolution.active] == [
        ("pet.name", "c2"),
        ("pet.name", "v2"),
        ("user.likes", "l1"),
    ]
    assert [e.id for e in resolution.excluded] == ["c1", "f", "l2", "s", "v1"]


# ---------------------------------------------------------------------------------------------
# R8 explain and trace


def test_it_explains_every_record_with_the_step_that_decided_it():
    """R8: each input id gets {id, step, reason, detail}; the detail names the deciding
    record, boundary or tombstone."""
    records = [
        rec("scope", scope=SCENE_SCOPE),
        rec("forgot", status="forgotten", since=1, value=""),
        rec("future", key="dog.name", vf=200),
        rec("ended", key="cat.name", vu=50),
        rec("blocked", key="fish.name", evidence=1),
        rec("old"),
        rec("new", vf=1, version=2, supersedes="old"),
        rec("weak", vf=2, authority="model-inferred", version=3),
    ]
    resolution = run(records, tombstones=[tomb("t9", key="fish.name")])
    got = {i: (e.step, e.reason) for i, e in resolution.explanations.items()}
    assert got == {
        "scope": ("R1", "scope"),
        "forgot": ("R2", "forgotten"),
        "future": ("R3", "not-yet-valid"),
        "ended": ("R3", "expired"),
        "blocked": ("R4", "forgotten"),
        "old": ("R5", "superseded"),
        "weak": ("R6", "lower-precedence"),
        "new": ("active", "active"),
    }
    details = {i: e.detail for i, e in resolution.explanations.items()}
    assert f"scene:{CONV}:greenhouse" in details["scope"]
    assert "valid_from 2026-08-09T08:00:00Z > now" == details["future"]
    assert "valid_until 2026-08-03T02:00:00Z <= now" == details["ended"]
    assert details["blocked"] == "blocked by tombstone t9"
    assert details["old"] == "superseded by new"
    assert "new" in details["weak"]
    assert resolution.explain("old").as_dict() == {
        "id": "old",
        "step": "R5",
        "reason": "superseded",
        "detail": "superseded by new",
    }


def test_it_never_puts_a_value_in_the_trace_or_the_explanations():
    """R8/§12: details and trace hold ids, counts and times, never memory text."""
    secret_value = "Marlowe-the-secret-plant"
    records = [
        rec("a", value=secret_value),
        rec("b", value=secret_value, vf=1, version=2),
        rec("c", key="user.likes", value=secret_value, scope=CHAR_SCOPE),
    ]
    resolution = run(records)
    assert secret_value.casefold() not in repr(resolution.trace).casefold()
    assert secret_value.casefold() not in repr(resolution.explanations).casefold()


def test_it_counts_every_reason_in_the_trace():
    """R8/§12: the trace is counts per reason plus the resolver version and now."""
    resolution = run(_mixed_records(), tombstones=[tomb("t1", key="dog.name")])
    assert resolution.trace == {
        "candidates": 8,
        "active": 3,
        "excluded_scope": 1,
        "excluded_forgotten": 1,
        "excluded_not_yet_valid": 1,
        "excluded_expired": 0,
        "excluded_superseded": 1,
        "excluded_lower_precedence": 1,
        "resolver_version": RESOLVER_VERSION,
        "now": "2026-08-05T04:00:00Z",
    }


# ---------------------------------------------------------------------------------------------
# resolve_slot (W5/W6)


def test_it_finds_the_slot_winner_at_a_valid_time():
    """resolve_slot applies R2–R6 at `at`: before the correction starts, the old value wins;
    after, the correction does."""
    records = [
        rec("old"),
        rec("new", vf=5, version=2, supersedes="old"),
        rec("gone", vf=6, version=3, status="forgotten", since=7, value=""),
    ]
    assert resolve_slot(records, at(4)).id == "old"
    assert resolve_slot(records, at(5)).id == "new"
    assert resolve_slot(records, at(-1)) is None


def test_it_finds_a_many_key_value_slot_winner_and_honours_tombstones():
    """resolve_slot with many=True and tombstones (R4)."""
    records = [
        rec("a", key="user.likes", value="Jazz", authority="user-confirmed"),
        rec("b", key="user.likes", value="jazz ", vf=3),
    ]
    assert resolve_slot(records, at(4), many=True).id == "a"
    blocked = [tomb("t1", key="user.likes", hashed=value_hash(SECRET, "JAZZ"))]
    assert resolve_slot(records, at(4), many=True, tombstones=blocked, secret=SECRET) is None


def test_it_refuses_records_of_several_slots():
    """resolve_slot is for ONE slot; mixing slots is a programming error."""
    with pytest.raises(ValueError):
        resolve_slot([rec("a"), rec("b", scope=CHAR_SCOPE)], at(1))
    with pytest.raises(ValueError):
        resolve_slot(
            [rec("a", key="user.likes"), rec("b", key="user.likes", value="x")], at(1), many=True
        )


# ---------------------------------------------------------------------------------------------
# Scale: linear work on a long slot


def test_it_stays_linear_on_a_slot_with_20k_versions():
    """R5/W11/W12 build their supersedes dicts once: a 20k-version chain resolves, derives
    history and plans normalisation without quadratic scans or deep recursion."""
    n = 20_000
    records = [rec("v00000")] + [
        rec(f"v{i:05d}", vf=i / 100, version=i + 1, supersedes=f"v{i - 1:05d}") for i in range(1, n)
    ]
    resolution = run(records, now=n)
    assert [r.id for r in resolution.active] == [f"v{n - 1:05d}"]
    assert resolution.trace["excluded_superseded"] == n - 1
    ends = effective_ends(records)
    assert ends["v00000"] == at(0.01) and ends[f"v{n - 1:05d}"] is None
    plan = plan_normalisation(records, at(n))
    assert len(plan) == n - 1 and plan[0].id == "v00000"
    assert plan_normalisation(apply_changes(records, plan), at(n)) == []
