"""`support.words`: reasons in words, pure and table-checked. Ids, kinds,
authorities and times only — never a value."""

from datetime import UTC, datetime, timedelta

from conversations.scopes import Scope
from memory.domain import MemoryRecord
from policy.domain import PolicyScope, Rule
from support import words

T0 = datetime(2026, 8, 3, 14, 5, tzinfo=UTC)


def record(id_, *, authority="rule-extracted", valid_from=T0, version=1, **extra):
    return MemoryRecord(
        id=id_,
        user="sam",
        key="dog.name",
        value="private-value",
        scope=Scope("user"),
        authority=authority,
        valid_from=valid_from,
        recorded_at=valid_from,
        evidence_time=valid_from,
        version=version,
        **extra,
    )


def test_it_says_times_in_utc_like_a_person():
    assert words.when(T0) == "3 Aug 2026, 14:05 UTC"
    assert words.when(None) == ""


def test_it_names_what_outranked_a_record_by_the_R6_order():
    loser = record("b")
    cases = [
        (record("a", authority="user-confirmed"), "a value the user confirmed ranks higher"),
        (
            record("a", valid_from=T0 + timedelta(hours=1)),
            "it is valid from a later time (3 Aug 2026, 15:05 UTC)",
        ),
        (record("a", version=2), "it is a later version"),
        (record("a"), "they rank the same; the order is fixed by id"),
    ]
    for winner, because in cases:
        said = words.record_words(
            step="R6",
            reason="lower-precedence",
            detail=f"lost to a ({because})",
            record=loser,
            records={"a": winner},
            tombstones={},
            actors=words.Actors(),
        )
        assert said == f"Another value for this key is used instead: {because}."


def test_it_tells_a_retraction_from_an_expiry():
    retracted = record("r", valid_until=T0, retracted_at=T0)
    expired = record("e", valid_until=T0)
    args = {"step": "R3", "reason": "expired", "detail": "", "records": {}, "tombstones": {}}
    assert words.record_words(record=retracted, actors=words.Actors(), **args) == (
        "Retracted by the user on 3 Aug 2026, 14:05 UTC: marked no longer true."
    )
    assert words.record_words(
        record=retracted, actors=words.Actors(retracted=frozenset({"r"})), **args
    ) == (
        "Retracted by support, on the user's behalf, on 3 Aug 2026, 14:05 UTC: marked no longer "
        "true."
    )
    assert words.record_words(record=expired, actors=words.Actors(), **args) == (
        "Expired: it applied until 3 Aug 2026, 14:05 UTC."
    )


def test_it_reads_who_acted_from_the_support_log():
    actors = words.Actors.from_log(
        [
            ("retract", "r1", {"closed": ["r1", "r2"]}),
            ("forget", "f1", {"tombstone": "t1", "records": ["f1"]}),
            ("revoke-rule", "rule-1", {}),
            ("normalise", "7", {"changed": 3}),
        ]
    )
    assert actors == words.Actors(
        retracted=frozenset({"r1", "r2"}),
        forgotten=frozenset({"f1"}),
        tombstones=frozenset({"t1"}),
        revoked_rules=frozenset({"rule-1"}),
    )


def test_it_says_a_revoked_product_default_was_revoked_by_the_operator():
    rule = Rule(
        id="d",
        user=None,
        capability="media.image",
        effect="deny",
        source="product-default",
        scope=PolicyScope("global"),
        valid_from=T0,
        revoked_at=T0,
    )
    assert words.rule_words(reason="revoked", rule=rule, actors=words.Actors()) == (
        "Revoked by the operator on 3 Aug 2026, 14:05 UTC."
    )


def test_it_puts_no_value_in_any_sentence():
    said = words.record_words(
        step="R2",
        reason="forgotten",
        detail="",
        record=record("x", status="forgotten", status_since=T0),
        records={},
        tombstones={},
        actors=words.Actors(),
    )
    assert "private-value" not in said


def test_it_says_a_boundary_compared_within_the_same_minute_to_the_second_e1():
    """R3 in words: "not valid yet … applies from 1 Dec 2026, 19:21" read at 19:21:58 would
    contradict itself; the start is said precisely enough to be told from the time asked."""
    from datetime import UTC, datetime

    from support.words import record_words

    class Record:
        valid_from = datetime(2026, 12, 1, 19, 21, 58, 600000, tzinfo=UTC)
        valid_until = None
        retracted_at = None

    now = datetime(2026, 12, 1, 19, 21, 58, 100000, tzinfo=UTC)
    said = record_words(
        step="R3",
        reason="not-yet-valid",
        detail="",
        record=Record(),
        records={},
        tombstones={},
        actors=words.Actors(),
        now=now,
    )
    assert said == (
        "Not valid yet at this time (1 Dec 2026, 19:21:58.100000 UTC): it applies from "
        "1 Dec 2026, 19:21:58.600000 UTC."
    )
    later = datetime(2026, 12, 1, 19, 40, tzinfo=UTC)
    Record.valid_from = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
    said = record_words(
        step="R3",
        reason="not-yet-valid",
        detail="",
        record=Record(),
        records={},
        tombstones={},
        actors=words.Actors(),
        now=later,
    )
    assert (
        said == "Not valid yet at this time (1 Dec 2026, 19:40 UTC): it applies from 2 Dec 2026, "
        "08:00 UTC."
    )
