"""The user's actions on one remembered record (SPEC §2): confirm, correct, "no longer true"
(W10, retract) and its undo (restore). Each runs under the user's memory lock and writes
through the write path (`memory.services.asserting`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from config.clock import db_now
from config.errors import Conflict, ValidationError

from .. import resolver
from ..domain import AUTHORITY_RANK, VALUE_MAX, RecordState, loggable_key, normalise_value
from ..domain import MemoryRecord as DomainRecord
from ..models import MemoryProfile, MemoryRecord
from ..selectors.records import memory_get, records_to_domain, registry, tombstones_of
from ..state import slots_state
from ..withholding import release_memories
from ..write_rules import Fact, Retract
from .asserting import (
    AssertResult,
    domain_record,
    lock_profile,
    memory_assert,
    row_scope_fields,
    write_facts,
    write_plan,
)

log = logging.getLogger("companion.memory")


def _slot_records(
    user, scope_id: str, key: str, *, many: bool, value: str | None
) -> list[DomainRecord]:
    """Every stored record of a slot (W-steps work on slots): the scoped key, narrowed to the
    value slot for a `many` key."""
    records = records_to_domain(
        MemoryRecord.objects.filter(user=user, scope_id=scope_id, key=key), user.username
    )
    if many and value is not None:
        slot = normalise_value(value)
        records = [
            r for r in records if r.status != "forgotten" and normalise_value(r.value) == slot
        ]
    return records


# ---------------------------------------------------------------------------------------------
# Confirm, correct, retract


@dataclass
class _Locked:
    """A record of a user-facing action, as the user's lock sees it: the stored row, its
    scoped key's state (`memory.state.slots_state`), the record within it, the clock and the
    secret."""

    row: MemoryRecord
    state: object  # memory.state.SlotsState
    record: DomainRecord
    now: datetime
    secret: bytes

    @property
    def many(self) -> bool:
        return self.record.key in self.state.many_keys

    @property
    def scope_fields(self) -> dict:
        return {self.row.scope_id: row_scope_fields(self.row)}


def _lock_record(record_id, user) -> _Locked:
    """The user's lock, then the record's scoped key read under it (one statement)."""
    row = memory_get(record_id, user=user)
    profile = lock_profile(row.user)
    state = slots_state(row.user, [(row.scope_id, row.key)], profile=profile)
    record = next(r for r in state.records[(row.scope_id, row.key)] if r.id == str(row.pk))
    return _Locked(row, state, record, db_now(), profile.secret_bytes())


def _slot_winner(locked: _Locked, value: str) -> DomainRecord | None:
    """What wins the record's slot now: its scoped key's, or for a `many` key the slot of
    `value` (R2–R6)."""
    record, many = locked.record, locked.many
    slot = locked.state.records[(record.scope_id, record.key)]
    if many:
        wanted = normalise_value(value)
        slot = [r for r in slot if r.status != "forgotten" and normalise_value(r.value) == wanted]
    tombstones = [t for t in locked.state.tombstones if t.key == record.key]
    return resolver.resolve_slot(
        slot, locked.now, tombstones=tombstones, many=many, secret=locked.secret
    )


def _current_or_already_yours(locked: _Locked, value: str) -> DomainRecord | None:
    """Confirm and correct act on what is current: the record must win its slot now (None
    then). When it no longer does but what does is the user's own word for `value` — the
    same confirm or correct was made since the page showed the record or the client sent it
    (another tab, the back button, a retry after a lost answer) — that record is answered:
    doing it again stores nothing (SPEC §2, `unchanged`). Anything else is a 409."""
    record = locked.record
    winner = _slot_winner(locked, record.value)
    if winner is not None and winner.id == record.id:
        return None
    if record.status != "forgotten":
        holder = _slot_winner(locked, value) if locked.many else winner
        if (
            holder is not None
            and holder.authority_rank >= AUTHORITY_RANK["user-confirmed"]
            and normalise_value(holder.value) == normalise_value(value)
        ):
            return holder
    raise Conflict("Only a memory that is current can be confirmed or corrected.")


def _already_yours(record: DomainRecord) -> AssertResult:
    return AssertResult("unchanged", record, state=RecordState("active"))


def _release(locked: _Locked) -> None:
    """F7.2: the user's confirm or correct after a forget is new evidence for the record: its
    links to the tombstones forgotten before now are released."""
    record = locked.record
    if record.withheld_by:
        release_memories(user=locked.row.user, memory_ids=[record.id], evidence_time=locked.now)


def _user_fact(locked: _Locked, *, value: str, authority: str, supersedes: str | None) -> Fact:
    """A write of the user's own (confirm, correct): valid from now, no sources."""
    record = locked.record
    return Fact(
        key=record.key,
        value=value,
        scope=record.scope,
        authority=authority,
        many=locked.many,
        confidence=1.0,
        valid_from=locked.now,
        supersedes=supersedes,
    )


def memory_confirm(*, record_id, user=None) -> AssertResult:
    """SPEC §2 Confirm: the same value again, `user-confirmed`, valid from now, superseding it.
    A record that already has the user's authority stays as it is (`unchanged`), and so does
    one whose slot the user's own word for its value holds now (answered with that record)."""
    with transaction.atomic():
        locked = _lock_record(record_id, user)
        yours = _current_or_already_yours(locked, locked.record.value)
        if yours is not None:
            return _already_yours(yours)
        return _confirm_locked(locked)


def _confirm_locked(locked: _Locked) -> AssertResult:
    record = locked.record
    # F7.2: the user's confirm after a forget is new evidence: it releases the record.
    _release(locked)
    if record.authority_rank >= AUTHORITY_RANK["user-confirmed"]:
        return AssertResult("unchanged", record, state=RecordState("active"))  # checked active
    fact = _user_fact(locked, value=record.value, authority="user-confirmed", supersedes=record.id)
    [result] = write_facts(
        locked.row.user,
        locked.state,
        [fact],
        secret=locked.secret,
        now=locked.now,
        scope_fields=locked.scope_fields,
    )
    log.info("memory_confirm key=%s", loggable_key(record.key))
    return result


def memory_correct(*, record_id, value: str, user=None) -> AssertResult:
    """SPEC §2 Correct: the new value, `user-corrected`, valid from now, in the record's scope,
    superseding it; for a `many` key the old value slot is retracted (W10) and the new value
    asserted. The same value (normalised as in §1) is a confirm. A record whose slot the
    user's own word for `value` holds now is answered `unchanged` with that record."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("A value must not be empty.", field="value")
    if len(value) > VALUE_MAX:
        raise ValidationError(f"At most {VALUE_MAX} characters.", field="value")
    with transaction.atomic():
        locked = _lock_record(record_id, user)
        yours = _current_or_already_yours(locked, value)
        if yours is not None:
            return _already_yours(yours)
        record = locked.record
        if normalise_value(value) == normalise_value(record.value):
            return _confirm_locked(locked)
        # F7.2: the user's correction after a forget is new evidence: it releases the record.
        _release(locked)
        writes: list[Fact | Retract] = []
        if locked.many:
            writes.append(Retract(record.scope_id, record.key, many=True, value=record.value))
        writes.append(
            _user_fact(
                locked,
                value=value,
                authority="user-corrected",
                supersedes=None if locked.many else record.id,
            )
        )
        plan = write_plan(
            locked.row.user,
            locked.state,
            writes,
            secret=locked.secret,
            now=locked.now,
            scope_fields=locked.scope_fields,
        )
        outcome = plan.outcomes[-1]
        log.info("memory_correct key=%s", loggable_key(record.key))
        return AssertResult(
            outcome.outcome,
            outcome.record,
            outcome.reason,
            state=plan.states.get(outcome.record.id) if outcome.record else None,
        )


@dataclass
class RetractResult:
    retracted_at: datetime
    records: list[DomainRecord]
    states: dict[str, RecordState] = field(default_factory=dict)  # E1, by id


def memory_retract(*, record_id, user=None) -> RetractResult:
    """W10: "I don't have a dog anymore" — retract the slot of this record."""
    with transaction.atomic():
        locked = _lock_record(record_id, user)
        record = locked.record
        if record.status == "forgotten":
            raise Conflict("This memory was forgotten; there is nothing to retract.")
        retract = Retract(
            record.scope_id,
            record.key,
            many=locked.many,
            value=record.value if locked.many else None,
        )
        plan = write_plan(
            locked.row.user, locked.state, [retract], secret=locked.secret, now=locked.now
        )
        closed = plan.outcomes[0]
        log.info("memory_retract key=%s closed=%d", loggable_key(record.key), len(closed))
        return RetractResult(
            locked.now, sorted(closed, key=lambda r: (r.valid_from, r.version)), plan.states
        )


def memory_restore(*, record_id, user=None) -> AssertResult:
    """Undo "no longer true": the user says the value is true again. W10 closed the slot at
    the retraction and W4 keeps it closed for evidence older than that; this is new evidence,
    so the value is asserted again as `user-confirmed`, valid from now (the old records keep
    their closed windows: history shows the gap). Refused for a record that was not retracted,
    was forgotten, or whose slot holds a value again (the undo would overrule it)."""
    row = memory_get(record_id, user=user)
    owner = row.user
    with transaction.atomic():
        lock_profile(owner)
        record = domain_record(row, owner.username)
        if record.status == "forgotten":
            raise Conflict("This memory was forgotten; its value is gone.")
        if record.retracted_at is None:
            raise Conflict("This memory was not marked as no longer true.")
        many = registry([record.key]).is_many(record.key)
        slot = _slot_records(
            owner, record.scope_id, record.key, many=many, value=record.value if many else None
        )
        secret = MemoryProfile.objects.get(user=owner).secret_bytes()
        now = db_now()
        if (
            resolver.resolve_slot(
                slot, now, tombstones=tombstones_of(owner, [record.key]), many=many, secret=secret
            )
            is not None
        ):
            raise Conflict("Something is remembered for this again, so there is nothing to undo.")
        result = memory_assert(
            user=owner,
            key=record.key,
            value=record.value,
            scope=record.scope,
            authority="user-confirmed",
            confidence=1.0,
        )
        log.info("memory_restore key=%s outcome=%s", loggable_key(record.key), result.outcome)
        return result
