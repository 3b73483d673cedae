"""Reasons in words, for support staff answering "why did the companion say that?".

The resolver, the projection and the policy engine explain themselves in stable codes and
terse details (`R3 expired`, `valid_until … <= now`, `outranked by …`): right for tests and
logs, hard to read out to a user. These functions turn them into sentences — "retracted by
the user on 3 Aug 2026, 14:05 UTC", "outranked by a value the user confirmed" — and say who
acted: the user, or support on their behalf (from the support-action log). They use ids,
kinds, authorities and times only, never a value. Standard library only: the caller passes
everything in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from conversations import places


def when(moment: datetime | None) -> str:
    """A time as support says it to a user: "3 Aug 2026, 14:05 UTC"."""
    if moment is None:
        return ""
    moment = moment.astimezone(UTC)
    return f"{moment.day} {moment:%b %Y, %H:%M} UTC"


def when_against(moment: datetime | None, other: datetime | None) -> str:
    """`moment` as `when` says it, with as much of its seconds as it takes to tell it apart
    from `other` (the time a reason compares it with): "applies from 2 Dec 2026, 01:12" read
    at 01:12 would seem to contradict "not valid yet"; "01:12:18.588900" does not."""
    if moment is None or other is None:
        return when(moment)
    m, o = moment.astimezone(UTC), other.astimezone(UTC)
    if m.replace(second=0, microsecond=0) != o.replace(second=0, microsecond=0):
        return when(m)
    if m.replace(microsecond=0) != o.replace(microsecond=0) or m == o:
        return f"{m.day} {m:%b %Y, %H:%M:%S} UTC"
    return f"{m.day} {m:%b %Y, %H:%M:%S}.{m.microsecond:06d} UTC"


AUTHORITY_WORDS = {
    "user-corrected": "a correction by the user",
    "user-confirmed": "a value the user confirmed",
    "rule-extracted": "a value taken from the user's own message",
    "model-inferred": "a value the model inferred",
}
PROMPT_WORDS = {
    "confirmed": "given to the companion as confirmed",
    "likely": "given to the companion as likely",
    "uncertain": "given to the companion as uncertain",
    "unsupported": "not given to the companion: no message of the user backs it up",
    "low-confidence": "not given to the companion: too unsure",
    "shadowed": "not given to the companion: a value for a narrower place is used instead",
    "budget": "not given to the companion: it did not fit the budget",
    "withheld": "not given to the companion: it holds a value the user forgot",
}
DECISION_WORDS = {
    "explicit-rule": "one rule decides",
    "conflicting-rules": "rules of the same rank disagree, so the companion asks first",
    "no-applicable-rule": "no rule applies here, so the companion asks first",
}
EFFECT_WORDS = {"allow": "allowed", "deny": "not allowed", "ask": "asks first"}


@dataclass(frozen=True)
class Actors:
    """What support did on a user's behalf, by object id (read from the support-action log):
    anything not listed here was done by the user (or the chat runtime acting for them)."""

    retracted: frozenset[str] = frozenset()  # memory record ids a support retract closed
    forgotten: frozenset[str] = frozenset()  # memory record ids a support forget purged
    tombstones: frozenset[str] = frozenset()  # tombstones a support forget made
    revoked_rules: frozenset[str] = frozenset()  # rules support revoked

    @classmethod
    def from_log(cls, rows: Iterable[tuple[str, str, Mapping]]) -> Actors:
        """`rows`: (action, object id, detail) of the support actions that were done."""
        retracted, forgotten, tombstones, revoked = set(), set(), set(), set()
        for action, object_id, detail in rows:
            detail = detail or {}
            if action == "retract":
                retracted.update(detail.get("closed", ()))
            elif action == "forget":
                forgotten.update(detail.get("records", ()))
                if detail.get("tombstone"):
                    tombstones.add(detail["tombstone"])
            elif action == "revoke-rule":
                revoked.add(object_id)
        return cls(
            frozenset(retracted), frozenset(forgotten), frozenset(tombstones), frozenset(revoked)
        )


def _who(done_by_support: bool) -> str:
    return "support, on the user's behalf," if done_by_support else "the user"


def _named_id(detail: str, marker: str) -> str:
    """The id the resolver names after `marker` in a detail ("superseded by <id>")."""
    _, found, rest = detail.partition(marker)
    return rest.split()[0] if found and rest.split() else ""


def _outranked_because(winner, loser) -> str:
    """Which R6 criterion decided, in words (authority, then start, then version)."""
    if winner.authority != loser.authority:
        return AUTHORITY_WORDS.get(winner.authority, winner.authority) + " ranks higher"
    if winner.valid_from != loser.valid_from:
        return f"it is valid from a later time ({when(winner.valid_from)})"
    if winner.version != loser.version:
        return "it is a later version"
    return "they rank the same; the order is fixed by id"


@dataclass(frozen=True)
class _Context:
    """What a reason is told against: the resolver's detail, the context's candidates by id,
    the tombstones by id, who acted, and the time the resolver decided at."""

    detail: str
    records: Mapping[str, object]
    tombstones: Mapping[str, tuple[datetime, str]]
    actors: Actors
    now: datetime | None


def _out_of_scope(record, seen: _Context) -> str:
    """R1: the record belongs to another place."""
    return (
        "Not for this context: it belongs "
        f"{places.KIND_WORDS.get(record.scope.kind, 'elsewhere')} ({record.scope_id})."
    )


def _erased(record, seen: _Context) -> str:
    """R2: the record was forgotten; only its skeleton is left."""
    return (
        f"Forgotten by {_who(record.id in seen.actors.forgotten)} on "
        f"{when(record.status_since)}; its value is erased."
    )


def _blocked(record, seen: _Context) -> str:
    """R4 (F3): a tombstone of the key blocks the record."""
    tombstone = _named_id(seen.detail, "tombstone ")
    at, scope_id = seen.tombstones.get(tombstone, (None, ""))
    if not at:
        return "Blocked by a forget of this key."
    where = " everywhere" if scope_id == "*" else ""
    by = _who(tombstone in seen.actors.tombstones)
    return (
        f"Blocked by a forget: {by} forgot this key{where} on {when(at)}, so older "
        "messages cannot bring it back."
    )


def _not_yet_valid(record, seen: _Context) -> str:
    """R3: the record starts after the time the resolver decided at."""
    now = seen.now
    at = f" ({when_against(now, record.valid_from)})" if now is not None else ""
    return (
        f"Not valid yet at this time{at}: it applies from {when_against(record.valid_from, now)}."
    )


def _expired(record, seen: _Context) -> str:
    """R3: the record ended: retracted (closed at or before its end), or its window ran out."""
    if (
        record.retracted_at is not None
        and record.valid_until is not None
        and record.retracted_at >= record.valid_until
    ):
        return (
            f"Retracted by {_who(record.id in seen.actors.retracted)} on "
            f"{when(record.retracted_at)}: marked no longer true."
        )
    if record.valid_until is not None:
        return f"Expired: it applied until {when_against(record.valid_until, seen.now)}."
    return f"Expired on {when(record.status_since)}."


def _superseded(record, seen: _Context) -> str:
    """R5: a later record replaced it."""
    successor = seen.records.get(_named_id(seen.detail, "superseded by "))
    if successor is not None:
        return (
            f"Replaced on {when(successor.recorded_at)} by "
            f"{AUTHORITY_WORDS.get(successor.authority, successor.authority)}."
        )
    return f"Replaced by a later value on {when(record.status_since)}."


def _outranked(record, seen: _Context) -> str:
    """R6: another record of the key ranked higher."""
    winner = seen.records.get(_named_id(seen.detail, "lost to "))
    if winner is not None:
        return f"Another value for this key is used instead: {_outranked_because(winner, record)}."
    return "Another value for this key is used instead."


# The resolver's reasons (R1, R3–R6) in words; a forgotten record left out at R2 is told
# as erased, one left out later as blocked by a forget.
_REASON_WORDS = {
    "scope": _out_of_scope,
    "forgotten": _blocked,
    "not-yet-valid": _not_yet_valid,
    "expired": _expired,
    "superseded": _superseded,
    "lower-precedence": _outranked,
}


def record_words(
    *,
    step: str,
    reason: str,
    detail: str,
    record,
    records: Mapping[str, object],
    tombstones: Mapping[str, tuple[datetime, str]],
    actors: Actors,
    now: datetime | None = None,
) -> str:
    """Why the resolver used or left out one record (R1–R6), in a sentence. `records` holds the
    context's candidates by id (to name a successor or a winner), `tombstones` maps a tombstone
    id to (forgotten at, scope id). `now`, the time the resolver decided at: a boundary it was
    compared with is said precisely enough to be told from it (`when_against`)."""
    if step == "active":
        return "Used: the current value for this key here."
    words = _erased if reason == "forgotten" and step == "R2" else _REASON_WORDS.get(reason)
    if words is None:
        return reason
    return words(record, _Context(detail, records, tombstones, actors, now))


def prompt_words(prompt: str) -> str:
    """What the projection (P1–P3) or the planner did with an active record."""
    return PROMPT_WORDS.get(prompt, prompt) if prompt else ""


def rule_words(*, reason: str, rule, actors: Actors) -> str:
    """Why one rule did or did not decide (D1–D5), in a sentence."""
    if reason == "decided":
        return f"Decides: {EFFECT_WORDS.get(rule.effect, rule.effect)}."
    if reason == "outranked":
        return (
            "Applies here, but a rule of higher rank (a more authoritative source or a narrower "
            "place) decides."
        )
    if reason == "tied":
        return (
            "Ties with another rule of the same rank that has a different effect, so the companion "
            "asks first."
        )
    if reason == "scope":
        return (
            "Not for this context: it applies "
            f"{places.KIND_WORDS.get(rule.scope.kind, 'elsewhere')} ({rule.scope.label()})."
        )
    if reason == "requester":
        return f"Only for requests by the {rule.requested_by}."
    if reason == "wrong-capability":
        return f"About {rule.capability}, not this capability."
    if reason == "revoked":
        who = "the operator" if rule.user is None else _who(rule.id in actors.revoked_rules)
        return f"Revoked by {who} on {when(rule.revoked_at)}."
    if reason == "expired":
        return f"Expired: it applied until {when(rule.valid_until)}."
    if reason == "not-yet-valid":
        return f"Not valid yet at this time: it applies from {when(rule.valid_from)}."
    return reason


# What a stored plan left out, by the reason it recorded then (the record may have changed
# since: the explain view at the plan's time has the whole story).
PLAN_REASON_WORDS = {
    "scope": "not for this context",
    "forgotten": "forgotten by then",
    "not-yet-valid": "not valid yet at the plan's time",
    "expired": "no longer valid at the plan's time (expired, or marked no longer true)",
    "superseded": "replaced by a later value",
    "lower-precedence": "another value for this key ranked higher",
    "unsupported": "no message of the user backs it up",
    "low-confidence": "too unsure",
    "shadowed": "a value for a narrower place was used instead",
    "budget": "did not fit the budget",
    "withheld": "holds a value the user forgot",
}


def plan_reason_words(reason: str) -> str:
    return PLAN_REASON_WORDS.get(reason, reason) if reason else ""


def decision_words(reason: str) -> str:
    return DECISION_WORDS.get(reason, reason)
