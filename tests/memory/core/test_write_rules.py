"""memory.write_rules without a database: the W-steps of a batch (SPEC §2) as a pure function."""

import datetime as dt
import itertools

import pytest

from config.errors import AuthorityConflict, ValidationError
from conversations.scopes import Scope
from memory.domain import MemoryRecord, Tombstone, value_hash
from memory.write_rules import Fact, Known, plan_writes

T = dt.datetime(2026, 8, 5, 12, 0, tzinfo=dt.UTC)
NOW = T + dt.timedelta(hours=1)
USER = Scope("user")
SID = "user:sam"
SECRET = b"k" * 32


def ids():
    counter = itertools.count(1)
    return lambda: f"new-{next(counter)}"


def stored(key, value, version, *, authority="rule-extracted", valid_from=T, **extra):
    return MemoryRecord(
        id=f"old-{key}-{version}",
        user="sam",
        key=key,
        value=value,
        scope=USER,
        authority=authority,
        valid_from=valid_from,
        recorded_at=valid_from,
        evidence_time=valid_from,
        version=version,
        **extra,
    )


def fact(key, value, *, many=False, at=NOW, **extra):
    return Fact(
        key=key,
        value=value,
        scope=USER,
        authority="rule-extracted",
        many=many,
        sources=("m1",),
        source_time=at,
        **extra,
    )


def plan(facts, records=None, **known):
    records = records or {}
    slots = {(SID, f.key): [] for f in facts}
    slots.update({(SID, k): v for k, v in records.items()})
    return plan_writes(
        facts, Known(slots, **known), user="sam", now=NOW, secret=SECRET, new_id=ids()
    )


def test_it_allocates_the_next_versions_per_scoped_key_in_order_w8():
    p = plan(
        [fact("dog.name", "Rex"), fact("user.likes", "jazz", many=True), fact("dog.name", "Max")],
        {"dog.name": [stored("dog.name", "Old", 4)]},
    )
    assert [(r.key, r.version) for r in p.inserts] == [
        ("dog.name", 5),
        ("user.likes", 1),
        ("dog.name", 6),
    ]
    # W6: each new open-ended value of a `one` key supersedes the winner before it.
    assert [r.supersedes for r in p.inserts] == ["old-dog.name-4", None, "new-1"]


def test_it_merges_a_repeated_value_into_the_row_it_is_inserting_w5():
    p = plan([fact("dog.name", "Rex"), fact("dog.name", " rex", confidence=0.5)])
    assert [o.outcome for o in p.outcomes] == ["created", "unchanged"]
    assert len(p.inserts) == 1 and p.links == [] and p.confidence == {}


def test_it_adds_provenance_and_confidence_to_a_stored_winner_w5():
    p = plan(
        [fact("dog.name", "Rex")], {"dog.name": [stored("dog.name", "Rex", 1, confidence=0.6)]}
    )
    [outcome] = p.outcomes
    assert outcome.outcome == "unchanged" and outcome.record.sources == ("m1",)
    assert (
        p.inserts == []
        and p.links == [("old-dog.name-1", "m1")]
        and p.confidence == {"old-dog.name-1": 1.0}
    )


def test_it_blocks_a_forgotten_value_and_stores_nothing_w3():
    tomb = Tombstone(
        id="t",
        user="sam",
        scope_id="*",
        key="user.likes",
        forgotten_at=NOW,
        blocks_sources_before=NOW,
        value_hash=value_hash(SECRET, "Jazz"),
    )
    p = plan(
        [fact("user.likes", "jazz", many=True), fact("user.likes", "rain", many=True)],
        tombstones=[tomb],
    )
    assert [(o.outcome, o.reason) for o in p.outcomes] == [
        ("blocked", "forgotten"),
        ("created", None),
    ]
    assert [r.value for r in p.inserts] == ["rain"]


def test_it_stores_old_evidence_of_a_retracted_slot_born_closed_w4():
    retracted = NOW - dt.timedelta(minutes=1)
    p = plan([fact("dog.name", "Rex", at=T)], retractions={(SID, "dog.name", ""): retracted})
    [record] = p.inserts
    assert record.valid_from == T and record.valid_until == retracted and record.supersedes is None


def test_it_supersedes_nothing_with_a_lower_authority_w7():
    p = plan(
        [fact("dog.name", "Rex")],
        {"dog.name": [stored("dog.name", "Max", 1, authority="user-corrected")]},
    )
    assert p.inserts[0].supersedes is None and p.inserts[0].version == 2


def test_it_refuses_an_explicit_supersedes_outside_the_slot_or_above_its_authority_w6():
    """The core raises the domain's own errors (errors once): the API answers them as they are."""
    with pytest.raises(ValidationError) as refused:
        plan([fact("dog.name", "Rex", supersedes="elsewhere")])
    assert refused.value.errors == {
        "supersedes": ["supersedes must name a record of the same slot."]
    }
    high = stored("dog.name", "Max", 1, authority="user-corrected")
    with pytest.raises(AuthorityConflict) as refused:
        plan([fact("dog.name", "Rex", supersedes=high.id)], {"dog.name": [high]})
    assert (refused.value.code, refused.value.status) == ("authority_conflict", 409)
    assert refused.value.detail == (
        "The record to supersede has authority user-corrected, higher than rule-extracted."
    )


def test_it_refuses_a_scoped_key_that_was_not_read():
    with pytest.raises(ValueError):
        plan_writes(
            [fact("dog.name", "Rex")], Known({}), user="sam", now=NOW, secret=SECRET, new_id=ids()
        )
