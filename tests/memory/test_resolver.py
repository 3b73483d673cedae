"""The pure resolver (SPEC §3 R1–R8), history windows (W11) and normalisation (W12).

No database: records are built in memory. Times are hours after T0, UTC."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from conversations.domain import Context, Scope
from memory import resolver as resolver_module
from memory.domain import RESOLVER_VERSION, MemoryRecord, Tombstone, value_hash
from memory.history import effective_ends, history_order
from memory.normalisation import StatusChange, apply_changes, plan_normalisation
from memory.resolver import resolve, resolve_slot

T0 = datetime(2026, 8, 1, tzinfo=UTC)
USER = "ana"
CHAR = "captain-rowan"
CONV = "6f1c3f0e-6a1d-4a57-9d0e-3b8c2f1a9e10"
OTHER_CONV = "0b7e9a52-1c55-4d8e-8a53-2f0f4f3d6c21"
SECRET = b"per-user-secret"
MANY = frozenset({"user.likes"})

USER_SCOPE = Scope("user")
CHAR_SCOPE = Scope("character", character=CHAR)
CONV_SCOPE = Scope("conversation", conversation=CONV)
SCENE_SCOPE = Scope("scene", conversation=CONV, scene="greenhouse")


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def rec(
    id: str,
    *,
    key: str = "pet.name",
    value: str = "Rex",
    scope: Scope = USER_SCOPE,
    authority: str = "rule-extracted",
    vf: float = 0,
    vu: float | None = None,
    version: int = 1,
    status: str = "active",
    since: float | None = None,
    supersedes: str | None = None,
    evidence: float | None = None,
    confidence: float = 1.0,
    user: str = USER,
) -> MemoryRecord:
    return MemoryRecord(
        id=id,
        user=user,
        key=key,
        value=value,
        scope=scope,
        authority=authority,
        valid_from=at(vf),
        recorded_at=at(vf),
        evidence_time=at(vf if evidence is None else evidence),
        version=version,
        status=status,
        status_since=None if since is None else at(since),
        confidence=confidence,
        valid_until=None if vu is None else at(vu),
        supersedes=supersedes,
        sources=("m1",),
    )


def tomb(
    id: str,
    *,
    key: str = "pet.name",
    scope_id: str = f"user:{USER}",
    before: float = 10,
    hashed: str | None = None,
    user: str = USER,
) -> Tombstone:
    return Tombstone(
        id=id,
        user=user,
        scope_id=scope_id,
        key=key,
        forgotten_at=at(before),
        blocks_sources_before=at(before),
        value_hash=hashed,
    )


def ctx(now: float = 100, *, scene: str | None = None, character: str = CHAR,
        conversation: str = CONV) -> Context:
    return Context(
        user=USER, character=character, conversation=conversation, now=at(now), scene=scene
    )


def run(records, now: float = 100, tombstones=(), **kwargs):
    return resolve(records, tombstones, kwargs.pop("context", None) or ctx(now),
                   many_keys=MANY, secret=SECRET, **kwargs)


def outcome(resolution) -> dict[str, str]:
    """id → reason, "active" for winners."""
    out = {r.id: "active" for r in resolution.active}
    out.update({e.id: e.reason for e in resolution.excluded})
    return out


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
        (Scope("scene", conversation=OTHER_CONV, scene="greenhouse"), ctx(scene="greenhouse"),
         "scope"),
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
    records = [rec("a"), rec("b", vf=1, version=2, supersedes="a", status="forgotten",
                             since=5, value="")]
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
    records = [rec("u"), rec("c", scope=CHAR_SCOPE), rec("v", scope=CONV_SCOPE),
               rec("other-key", key="dog.name")]
    resolution = run(records, tombstones=[tomb("t1", scope_id="*")])
    assert outcome(resolution) == {"u": "forgotten", "c": "forgotten", "v": "forgotten",
                                   "other-key": "active"}


def test_it_ignores_tombstones_of_another_scope_or_user():
    """R4/F3: the tombstone must name the record's scope id (or `*`) and user."""
    records = [rec("u"), rec("c", scope=CHAR_SCOPE)]
    tombstones = [tomb("t1", scope_id=f"character:{USER}:{CHAR}"),
                  tomb("t2", scope_id="*", user="bo")]
    assert outcome(run(records, tombstones=tombstones)) == {"u": "active", "c": "forgotten"}


def test_it_blocks_only_the_forgotten_value_of_a_many_key():
    """R4/F1: a value-level tombstone (HMAC of the normalised value) blocks that value slot
    only, whatever its case or surrounding spaces."""
    records = [
        rec("jazz", key="user.likes", value="Jazz"),
        rec("jazz2", key="user.likes", value="  JAZZ ", scope=CHAR_SCOPE),
        rec("rain", key="user.likes", value="rainy days"),
    ]
    tombstones = [tomb("t1", key="user.likes", scope_id="*",
                       hashed=value_hash(SECRET, "jazz"))]
    assert outcome(run(records, tombstones=tombstones)) == {
        "jazz": "forgotten", "jazz2": "forgotten", "rain": "active"}


def test_it_hashes_values_only_when_a_tombstone_has_a_value_hash(monkeypatch):
    """R4: the HMAC is computed only when some tombstone for that key carries a hash."""
    def no_hashing(secret, value):
        raise AssertionError("value_hash must not be called")

    monkeypatch.setattr(resolver_module, "value_hash", no_hashing)
    resolution = run([rec("a"), rec("b", key="dog.name")],
                     tombstones=[tomb("t1", before=-1), tomb("t2", key="cat.name")])
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
    records = [rec("v1"), rec("v2", vf=1, version=2, supersedes="v1"),
               rec("v3", vf=2, version=3, supersedes="v2"),
               rec("v4", vf=3, version=4, supersedes="v3")]
    resolution = run(records)
    assert outcome(resolution) == {"v1": "superseded", "v2": "superseded",
                                   "v3": "superseded", "v4": "active"}
    assert resolution.explain("v2").detail == "superseded by v3"


def test_it_brings_the_older_value_back_when_a_correction_expires():
    """R5/W9: a correction with its own valid_until hides what it corrects only inside its
    window; an expired correction no longer hides it."""
    records = [rec("old", value="Harbor"),
               rec("temp", value="Marlowe", vf=1, vu=3, version=2, supersedes="old")]
    assert outcome(run(records, now=2)) == {"old": "superseded", "temp": "active"}
    assert outcome(run(records, now=3)) == {"old": "active", "temp": "expired"}


def test_it_does_not_let_a_future_correction_hide_the_present_value():
    """R3 before R5: a correction that is not yet valid hides nothing."""
    records = [rec("old"), rec("new", vf=5, version=2, supersedes="old")]
    assert outcome(run(records, now=4)) == {"old": "active", "new": "not-yet-valid"}


def test_it_does_not_let_a_blocked_correction_hide_anything():
    """R4 before R5: a correction blocked by a tombstone (old evidence) did not pass R1–R4,
    while the record it corrects, with newer evidence, is not blocked."""
    records = [rec("said-again", vf=0, evidence=11),
               rec("stale", vf=1, version=2, evidence=3, supersedes="said-again")]
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
        ({"authority": "user-corrected", "vf": 0}, {"authority": "model-inferred", "vf": 5},
         "a", "higher authority"),
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
    assert outcome(run(records)) == {"jazz1": "lower-precedence", "jazz2": "active",
                                     "rain": "active"}


def test_it_keeps_one_winner_per_scoped_key_not_per_key():
    """R6 is per scoped key: the same key in two scopes gives two winners (P3 shadows)."""
    records = [rec("u"), rec("c", scope=CHAR_SCOPE, value="Max")]
    assert outcome(run(records)) == {"u": "active", "c": "active"}


# ---------------------------------------------------------------------------------------------
# R7 determinism


def _mixed_records():
    return [
        rec("v1"), rec("v2", vf=1, version=2, supersedes="v1"),
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
        ("pet.name", "c2"), ("pet.name", "v2"), ("user.likes", "l1")]
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
        rec("old"), rec("new", vf=1, version=2, supersedes="old"),
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
        "id": "old", "step": "R5", "reason": "superseded", "detail": "superseded by new"}


def test_it_never_puts_a_value_in_the_trace_or_the_explanations():
    """R8/§12: details and trace hold ids, counts and times, never memory text."""
    secret_value = "Marlowe-the-secret-plant"
    records = [rec("a", value=secret_value), rec("b", value=secret_value, vf=1, version=2),
               rec("c", key="user.likes", value=secret_value, scope=CHAR_SCOPE)]
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
    records = [rec("old"), rec("new", vf=5, version=2, supersedes="old"),
               rec("gone", vf=6, version=3, status="forgotten", since=7, value="")]
    assert resolve_slot(records, at(4)).id == "old"
    assert resolve_slot(records, at(5)).id == "new"
    assert resolve_slot(records, at(-1)) is None


def test_it_finds_a_many_key_value_slot_winner_and_honours_tombstones():
    """resolve_slot with many=True and tombstones (R4)."""
    records = [rec("a", key="user.likes", value="Jazz", authority="user-confirmed"),
               rec("b", key="user.likes", value="jazz ", vf=3)]
    assert resolve_slot(records, at(4), many=True).id == "a"
    blocked = [tomb("t1", key="user.likes", hashed=value_hash(SECRET, "JAZZ"))]
    assert resolve_slot(records, at(4), many=True, tombstones=blocked, secret=SECRET) is None


def test_it_refuses_records_of_several_slots():
    """resolve_slot is for ONE slot; mixing slots is a programming error."""
    with pytest.raises(ValueError):
        resolve_slot([rec("a"), rec("b", scope=CHAR_SCOPE)], at(1))
    with pytest.raises(ValueError):
        resolve_slot([rec("a", key="user.likes"), rec("b", key="user.likes", value="x")],
                     at(1), many=True)


# ---------------------------------------------------------------------------------------------
# W11 history


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        # a chain: each version ends where its correction starts
        ([rec("v1"), rec("v2", vf=2, version=2, supersedes="v1"),
          rec("v3", vf=4, version=3, supersedes="v2")],
         {"v1": 2, "v2": 4, "v3": None}),
        # its own valid_until comes first
        ([rec("v1", vu=1), rec("v2", vf=2, version=2, supersedes="v1")],
         {"v1": 1, "v2": None}),
        # a temporary override (closed) cuts nothing: the old value comes back after it
        ([rec("v1"), rec("v2", vf=2, vu=4, version=2, supersedes="v1")],
         {"v1": None, "v2": 4}),
        # a later open record with lower authority does not cut; with equal authority it does
        ([rec("hi", authority="user-confirmed"),
          rec("lo", vf=2, version=2, authority="model-inferred"),
          rec("eq", vf=5, version=3, authority="user-confirmed")],
         {"hi": 5, "lo": 5, "eq": None}),
        # never before its own valid_from (a correction that starts earlier); the record a
        # correction supersedes never cuts the correction, even if it starts later
        ([rec("v1", vf=3), rec("v2", vf=1, version=2, supersedes="v1")],
         {"v1": 3, "v2": None}),
        # equal valid_from: the higher version is later and cuts to an empty window
        ([rec("v1", vf=3), rec("v2", vf=3, version=2)], {"v1": 3, "v2": None}),
        # forgotten skeletons neither cut nor get cut
        ([rec("v1"), rec("f", vf=2, version=2, supersedes="v1", status="forgotten", since=3,
                         value=""),
          rec("f2", vf=1, vu=9, version=3, status="forgotten", since=3, value=""),
          rec("v4", vf=5, version=4)],
         {"v1": 5, "f": None, "f2": 9, "v4": None}),
    ],
)
def test_it_derives_effective_ends(records, expected):
    """W11: the earliest of own valid_until, the first open-ended superseding record's
    valid_from, and the earliest later open-ended record of the slot with at least its
    authority — never before its own valid_from."""
    ends = effective_ends(records)
    assert ends == {k: None if v is None else at(v) for k, v in expected.items()}


def test_it_derives_effective_ends_per_value_slot_of_a_many_key():
    """W11: for a many key, only records of the same value slot cut each other."""
    records = [rec("jazz", key="user.likes", value="Jazz"),
               rec("rain", key="user.likes", value="rain", vf=2, version=2),
               rec("jazz2", key="user.likes", value="JAZZ", vf=4, version=3)]
    assert effective_ends(records, many=True) == {"jazz": at(4), "rain": None, "jazz2": None}


def test_it_lists_history_by_valid_from_then_version():
    """W11: history order is (valid_from, version), whatever the write order."""
    records = [rec("c", vf=2, version=1), rec("a", vf=1, version=3), rec("b", vf=2, version=0),
               rec("a", vf=1, version=3)]
    assert [r.id for r in history_order(records)] == ["a", "b", "c"]


# ---------------------------------------------------------------------------------------------
# W12 normalisation


def test_it_marks_expired_records_since_their_valid_until():
    """W12: expired since valid_until, only once valid_until <= now."""
    records = [rec("a", vu=5), rec("b", key="dog.name", vu=7)]
    assert plan_normalisation(records, at(6)) == [StatusChange("a", "expired", at(5))]


def test_it_marks_a_chain_from_the_oldest_record_up():
    """W12: each version is superseded since its open-ended correction's valid_from, and a
    record is marked only after what it supersedes; any input order gives the same plan."""
    records = [rec("v1"), rec("v2", vf=1, version=2, supersedes="v1"),
               rec("v3", vf=2, version=3, supersedes="v2"),
               rec("v4", vf=3, version=4, supersedes="v3")]
    expected = [StatusChange("v1", "superseded", at(1)),
                StatusChange("v2", "superseded", at(2)),
                StatusChange("v3", "superseded", at(3))]
    assert plan_normalisation(records, at(10)) == expected
    assert plan_normalisation(list(reversed(records)), at(10)) == expected
    # the last correction is not valid yet at 2.5: v3 stays unmarked
    assert plan_normalisation(records, at(2.5)) == expected[:2]


@pytest.mark.parametrize(
    ("correction", "why"),
    [
        ({"vu": 19}, "a temporary override hides only inside its window"),
        ({"status": "forgotten", "since": 2, "value": ""}, "a forgotten record hides nothing"),
        ({"evidence": -5}, "older evidence: a tombstone could block it alone"),
        ({"vf": 20}, "not valid yet at the normalisation time"),
    ],
)
def test_it_does_not_mark_what_an_unusable_correction_names(correction, why):
    """W12: only an open-ended, active or superseded correction with valid_from <= now marks
    what it names (and not one whose evidence is older than the record's)."""
    records = [rec("v1"), rec("v2", version=2, supersedes="v1", **{"vf": 1, **correction})]
    assert plan_normalisation(records, at(10)) == [], why


def test_it_waits_for_the_whole_chain_before_marking():
    """W12: v3 supersedes a temporary override v2, which hides v1 only inside its window.
    v1 is never marked by v2, so v2 must not be marked superseded (a database skipping it
    would let v1 back); once v2's window is over it is marked expired instead."""
    records = [rec("v1"), rec("v2", vf=1, vu=6, version=2, supersedes="v1"),
               rec("v3", vf=3, version=3, supersedes="v2")]
    assert plan_normalisation(records, at(4)) == []
    assert plan_normalisation(records, at(7)) == [StatusChange("v2", "expired", at(6))]


def test_it_never_touches_forgotten_rows_or_re_marks_marked_ones():
    """W12: forgotten rows stay as they are and a marked row keeps its mark."""
    records = [rec("f", vu=1, status="forgotten", since=2, value=""),
               rec("s", key="dog.name", vu=1, status="superseded", since=0.5),
               rec("e", key="cat.name", vu=1, status="expired", since=1)]
    assert plan_normalisation(records, at(10)) == []


def test_it_prefers_the_earlier_mark_when_both_apply():
    """W12: superseded since 2 beats expired since 5 (the row hides sooner); the reverse
    picks expired."""
    records = [rec("v1", vu=5), rec("v2", vf=2, version=2, supersedes="v1")]
    assert plan_normalisation(records, at(10)) == [StatusChange("v1", "superseded", at(2))]
    records = [rec("v1", vu=1), rec("v2", vf=2, version=2, supersedes="v1")]
    assert plan_normalisation(records, at(10)) == [StatusChange("v1", "expired", at(1))]


def test_it_normalises_idempotently_without_changing_the_resolution():
    """W12: applying the plan then planning again gives []; the resolution is the same at
    every now, also when rows marked before now are skipped."""
    records = [rec("v1"), rec("v2", vf=1, version=2, supersedes="v1"),
               rec("v3", vf=2, version=3, supersedes="v2"), rec("x", key="dog.name", vu=3)]
    plan = plan_normalisation(records, at(10))
    normalised = apply_changes(records, plan)
    assert plan_normalisation(normalised, at(10)) == []
    for now in (-1, 0, 0.5, 1, 1.5, 2, 3, 4, 11):
        before = run(records, now=now)
        after = run(normalised, now=now)
        assert [r.id for r in after.active] == [r.id for r in before.active]
        assert after.excluded == before.excluded
        skipped = [r for r in normalised
                   if r.status not in ("superseded", "expired") or r.status_since > at(now)]
        reduced = outcome(run(skipped, now=now))
        assert reduced == {k: v for k, v in outcome(before).items() if k in reduced}


def test_it_applies_changes_in_place_of_the_rows():
    """apply_changes writes status and status_since and keeps the input order."""
    records = [rec("b"), rec("a", vu=1)]
    changed = apply_changes(records, [StatusChange("a", "expired", at(1))])
    assert [(r.id, r.status, r.status_since) for r in changed] == [
        ("b", "active", None), ("a", "expired", at(1))]


# ---------------------------------------------------------------------------------------------
# Scale: linear work on a long slot


def test_it_stays_linear_on_a_slot_with_20k_versions():
    """R5/W11/W12 build their supersedes dicts once: a 20k-version chain resolves, derives
    history and plans normalisation without quadratic scans or deep recursion."""
    n = 20_000
    records = [rec("v00000")] + [
        rec(f"v{i:05d}", vf=i / 100, version=i + 1, supersedes=f"v{i - 1:05d}")
        for i in range(1, n)
    ]
    resolution = run(records, now=n)
    assert [r.id for r in resolution.active] == [f"v{n - 1:05d}"]
    assert resolution.trace["excluded_superseded"] == n - 1
    ends = effective_ends(records)
    assert ends["v00000"] == at(0.01) and ends[f"v{n - 1:05d}"] is None
    plan = plan_normalisation(records, at(n))
    assert len(plan) == n - 1 and plan[0].id == "v00000"
    assert plan_normalisation(apply_changes(records, plan), at(n)) == []
