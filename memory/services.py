"""Memory writers (DESIGN habit 2): the only code that changes memory state. Each service runs
in one transaction, reads the database clock once, holds the user's memory lock while it
decides, calls the pure core, and saves.

Serialisation: writes of one user take a row lock on that user's MemoryProfile. That makes the
check-then-write steps of W2, W5 and W8 race-free (concurrent writers never duplicate a
version, and one idempotency key stores one record), and the unique constraint on
(user, scope_id, key, version) stays as a backstop.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, transaction

from config import metrics
from config.clock import db_now
from config.errors import (
    AuthorityConflict,
    Conflict,
    IdempotencyKeyReused,
    ValidationError,
)
from config.storage import RowWriter
from conversations.domain import SCOPE_KINDS, Scope
from conversations.models import Character, Conversation, Message

from . import changes, normalisation, resolver
from .changes import plan_events
from .domain import (
    AUTHORITY_RANK,
    REASON_PAUSED,
    VALUE_MAX,
    RecordState,
    known_time_zones,
    loggable_key,
    normalise_value,
)
from .domain import (
    MemoryRecord as DomainRecord,
)
from .models import (
    SETTINGS_CHANGED_BY,
    IdempotencyRecord,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    SlotRetraction,
)
from .selectors.records import memory_get, records_to_domain, registry, tombstones_of
from .selectors.states import memory_states
from .selectors.writes import write_state
from .switches import MemorySettings, settings_of_profile
from .writes import (
    Fact,
    Known,
    Retract,
    WritePlan,
    WriteRefused,
    check_fields,
    plan_writes,
)

# I8: the authorities of what the companion learns by itself; `learn` off blocks them.
LEARNED_AUTHORITIES = frozenset({"model-inferred", "rule-extracted"})

log = logging.getLogger("companion.memory")


@dataclass
class AssertResult:
    outcome: str  # created | unchanged | replayed | blocked
    record: DomainRecord | None
    reason: str | None = None
    extra: dict = field(default_factory=dict)
    state: RecordState | None = None  # E1: the record's state at the write's time

    @property
    def http_status(self) -> int:
        return 201 if self.outcome == "created" else 200


# ---------------------------------------------------------------------------------------------
# Locks and small helpers


def lock_profile(user) -> MemoryProfile:
    """Take the user's memory write lock (and create the profile, with its secret, on first
    use; a concurrent first use loses the insert race and then waits on the lock)."""
    profile = MemoryProfile.objects.select_for_update().filter(user=user).first()
    if profile is None:
        try:
            with transaction.atomic():
                MemoryProfile.objects.create(user=user)
        except IntegrityError:
            pass
        profile = MemoryProfile.objects.select_for_update().get(user=user)
    return profile


def _scope_row_fields(user, scope: Scope) -> dict:
    """W1: resolve a scope's references against the database, owned by `user`."""
    if scope.kind not in SCOPE_KINDS:
        raise ValidationError("Unknown scope kind.", field="scope.kind")
    fields: dict = {
        "scope_kind": scope.kind,
        "character": None,
        "conversation": None,
        "scene": None,
    }
    if scope.kind == "character":
        character = Character.objects.filter(slug=scope.character).first()
        if character is None:
            raise ValidationError(
                f"Unknown character {scope.character!r}.", field="scope.character"
            )
        fields["character"] = character
    elif scope.kind in ("conversation", "scene"):
        conversation = Conversation.objects.filter(user=user, pk=scope.conversation).first()
        if conversation is None:
            raise ValidationError("Unknown conversation for this user.", field="scope.conversation")
        fields["conversation"] = conversation
        if scope.kind == "scene":
            if not scope.scene:
                raise ValidationError("A scene scope needs a scene id.", field="scope.scene")
            fields["scene"] = scope.scene
    return fields


def _payload_hmac(secret: bytes, payload: dict) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hmac.new(secret, canonical.encode(), hashlib.sha256).hexdigest()


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


def _domain(record: MemoryRecord, username: str) -> DomainRecord:
    return records_to_domain(MemoryRecord.objects.filter(pk=record.pk), username)[0]


# ---------------------------------------------------------------------------------------------
# Assert (W1–W9)


def memory_assert(
    *,
    user,
    key: str,
    value: str,
    scope: Scope,
    authority: str = "model-inferred",
    confidence: float = 1.0,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    sources: list[str] | tuple[str, ...] = (),
    supersedes: str | None = None,
    idempotency_key: str | None = None,
) -> AssertResult:
    """Write a memory: W1 validate, W2 idempotency, I8 the `learn` switch, W3 tombstones, W4
    retractions, W5 unchanged values, W6 store (with W7 authority, W8 versions, W9
    out-of-order writes).

    I8: while the user's `learn` switch is off, a `model-inferred` or `rule-extracted` write
    stores nothing (outcome `blocked`, reason `paused`, like W3); the user's own authorities
    still write. The switch is read from the profile row the write lock takes anyway."""
    # W1: everything that can be checked without the lock, so bad input stores nothing.
    _validate_assert(
        key=key,
        value=value,
        authority=authority,
        confidence=confidence,
        valid_from=valid_from,
        valid_until=valid_until,
        idempotency_key=idempotency_key,
    )
    source_ids = sorted({str(s) for s in sources})

    with transaction.atomic():
        return _memory_assert_locked(
            user=user,
            key=key,
            value=value,
            scope=scope,
            authority=authority,
            confidence=float(confidence),
            valid_from=valid_from,
            valid_until=valid_until,
            source_ids=source_ids,
            supersedes=str(supersedes) if supersedes else None,
            idempotency_key=idempotency_key,
        )


def _validate_assert(
    *, key, value, authority, confidence, valid_from=None, valid_until=None, idempotency_key=None
) -> None:
    """W1: the checks that need no database (`memory.writes.check_fields`)."""
    try:
        check_fields(
            key=key,
            value=value,
            authority=authority,
            confidence=confidence,
            valid_from=valid_from,
            valid_until=valid_until,
        )
    except WriteRefused as refused:
        raise ValidationError(refused.message, field=refused.field) from None
    if idempotency_key is not None and not (1 <= len(idempotency_key) <= 255):
        raise ValidationError("1–255 characters.", field="idempotency_key")


def log_assert(
    result: AssertResult, *, key: str, scope_kind: str, authority: str, sources: int
) -> None:
    log_memory_write(
        outcome=result.outcome,
        reason=result.reason,
        key=key,
        scope_kind=scope_kind,
        authority=authority,
        sources=sources,
    )


def log_memory_write(
    *, outcome: str, reason: str | None, key: str, scope_kind: str, authority: str, sources: int
) -> None:
    """SPEC §12: ids, counts and a loggable key only — never a value."""
    log.info(
        "memory_assert outcome=%s key=%s scope_kind=%s authority=%s sources=%d",
        outcome,
        loggable_key(key),
        scope_kind,
        authority,
        sources,
    )
    if outcome == "blocked":
        metrics.write_blocked(reason)


def _memory_assert_locked(
    *,
    user,
    key,
    value,
    scope,
    authority,
    confidence,
    valid_from,
    valid_until,
    source_ids,
    supersedes,
    idempotency_key,
) -> AssertResult:
    scope_fields = _scope_row_fields(user, scope)
    messages = list(Message.objects.filter(user=user, pk__in=source_ids)) if source_ids else []
    if len(messages) != len(source_ids):
        raise ValidationError("Every source must be a message of this user.", field="sources")
    profile = lock_profile(user)
    secret = profile.secret_bytes()
    now = db_now()

    # W2: idempotency — the same key and payload replays, another payload is a conflict.
    payload_hmac = None
    if idempotency_key is not None:
        payload = {
            "key": key,
            "value": value,
            "scope": scope.as_dict(),
            "authority": authority,
            "confidence": confidence,
            "valid_from": valid_from,
            "valid_until": valid_until,
            "sources": source_ids,
            "supersedes": supersedes,
        }
        payload_hmac = _payload_hmac(secret, payload)
        previous = IdempotencyRecord.objects.filter(user=user, key=idempotency_key).first()
        if previous is not None:
            if not hmac.compare_digest(previous.payload_hmac, payload_hmac):
                raise IdempotencyKeyReused("This idempotency key was used with another payload.")
            record = _domain(previous.record, user.username) if previous.record_id else None
            state = memory_states(user, [record], now=now)[record.id] if record else None
            return AssertResult(
                "replayed",
                record,
                previous.reason or None,
                {"original_outcome": previous.outcome},
                state=state,
            )

    if authority in LEARNED_AUTHORITIES and not profile.learn:
        result = AssertResult("blocked", None, REASON_PAUSED)
    else:
        result = _assert_core(
            user=user,
            key=key,
            value=value,
            scope=scope,
            scope_fields=scope_fields,
            authority=authority,
            confidence=confidence,
            valid_from=valid_from,
            valid_until=valid_until,
            messages=messages,
            supersedes=supersedes,
            secret=secret,
            now=now,
        )
    if idempotency_key is not None:
        IdempotencyRecord.objects.create(
            user=user,
            key=idempotency_key,
            payload_hmac=payload_hmac,
            outcome=result.outcome,
            reason=result.reason or "",
            record_id=result.record.id if result.record else None,
            created_at=now,
        )
    log_assert(result, key=key, scope_kind=scope.kind, authority=authority, sources=len(messages))
    return result


def _assert_core(
    *,
    user,
    key,
    value,
    scope,
    scope_fields,
    authority,
    confidence,
    valid_from,
    valid_until,
    messages,
    supersedes,
    secret,
    now,
) -> AssertResult:
    """W3–W9 for one assert: a batch of one (`memory.writes`), read and written like any."""
    scope_id = scope.scope_id(user.username)
    state = write_state(user, [(scope_id, key)])
    fact = Fact(
        key=key,
        value=value,
        scope=scope,
        authority=authority,
        many=key in state.many_keys,
        confidence=confidence,
        valid_from=valid_from,
        valid_until=valid_until,
        sources=tuple(str(m.pk) for m in messages),
        source_time=max(m.created_at for m in messages) if messages else None,
        supersedes=supersedes,
    )
    [result] = _write_facts(
        user, state, [fact], secret=secret, now=now, scope_fields={scope_id: scope_fields}
    )
    return result


def _write_facts(
    user,
    state,
    facts: list[Fact],
    *,
    secret: bytes,
    now,
    scope_fields=None,
    writer: RowWriter | None = None,
) -> list[AssertResult]:
    """Decide `facts` with the pure W-steps against `state` and write the outcome
    (`write_plan`); the answers in the facts' order."""
    plan = write_plan(
        user, state, facts, secret=secret, now=now, scope_fields=scope_fields, writer=writer
    )
    return [
        AssertResult(
            o.outcome, o.record, o.reason, state=plan.states.get(o.record.id) if o.record else None
        )
        for o in plan.outcomes
    ]


def write_plan(
    user,
    state,
    writes: list[Fact | Retract],
    *,
    secret: bytes,
    now,
    scope_fields=None,
    writer: RowWriter | None = None,
) -> WritePlan:
    """Decide `writes` with the pure W-steps (`memory.writes.plan_writes`) against `state`
    (read under the user's lock, which the caller holds) and write what they decided: the new
    rows, their source links and W5's, W5's confidence raises, W10's closed windows and
    retraction rows — through `writer` when the caller gathers its transaction's writes, else
    written here. `scope_fields` gives the row fields of each scope id other than the user
    scope (`scope_kind`, `character_id`, `conversation_id`, `scene`)."""
    try:
        plan = plan_writes(
            writes,
            Known(state.records, state.tombstones, state.retractions),
            user=user.username,
            now=now,
            secret=secret,
            new_id=lambda: str(uuid.uuid4()),
        )
    except WriteRefused as refused:
        if refused.kind == "authority":
            raise AuthorityConflict(refused.message) from None
        raise ValidationError(refused.message, field=refused.field) from None
    own = writer is None
    writer = RowWriter() if own else writer
    add_plan_rows(writer, user, plan, scope_fields or {})
    if own:
        writer.flush()
    return plan


USER_SCOPE_FIELDS = {
    "scope_kind": "user",
    "character_id": None,
    "conversation_id": None,
    "scene": None,
}


def add_plan_rows(writer: RowWriter, user, plan: WritePlan, scope_fields: dict) -> None:
    """The rows of a decided write plan, added to `writer` in the order the database takes
    them (records, then their source links, then updates of stored records)."""
    writer.insert(
        [
            MemoryRecord(
                id=r.id,
                user=user,
                key=r.key,
                value=r.value,
                scope_id=r.scope_id,
                **(USER_SCOPE_FIELDS if r.scope.kind == "user" else scope_fields[r.scope_id]),
                authority=r.authority,
                confidence=r.confidence,
                valid_from=r.valid_from,
                valid_until=r.valid_until,
                recorded_at=r.recorded_at,
                evidence_time=r.evidence_time,
                supersedes_id=r.supersedes,
                version=r.version,
                retracted_at=r.retracted_at,
            )
            for r in plan.inserts
        ]
    )
    links = [MemorySource(memory_id=r.id, message_id=m) for r in plan.inserts for m in r.sources]
    links += [MemorySource(memory_id=rid, message_id=m) for rid, m in plan.links]
    writer.insert(links, ignore_conflicts=True)
    for rid, confidence in plan.confidence.items():
        writer.update(MemoryRecord, rid, confidence=confidence)
    for rid, (valid_until, retracted_at) in plan.closes.items():
        writer.update(MemoryRecord, rid, valid_until=valid_until, retracted_at=retracted_at)
    writer.insert(
        [
            SlotRetraction(
                user=user, scope_id=scope_id, key=key, value_hash=hashed, retracted_at=at
            )
            for scope_id, key, hashed, at in plan.retractions
        ]
    )
    writer.insert(plan_events(user.username, plan))  # V1: in the write's own statement


def row_scope_fields(row: MemoryRecord) -> dict:
    """A stored record's scope columns, for new rows of its scoped key."""
    return {
        "scope_kind": row.scope_kind,
        "character_id": row.character_id,
        "conversation_id": row.conversation_id,
        "scene": row.scene,
    }


# ---------------------------------------------------------------------------------------------
# Confirm, correct, retract


@dataclass
class _Locked:
    """A record of a user-facing action, as the user's lock sees it: the stored row, its
    scoped key's state (`write_state`), the record within it, the clock and the secret."""

    row: MemoryRecord
    state: object  # selectors.WriteState
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
    state = write_state(row.user, [(row.scope_id, row.key)])
    record = next(r for r in state.records[(row.scope_id, row.key)] if r.id == str(row.pk))
    return _Locked(row, state, record, db_now(), profile.secret_bytes())


def _require_active_now(locked: _Locked) -> None:
    """Confirm and correct act on what is current: the record must win its slot now."""
    record, many = locked.record, locked.many
    slot = locked.state.records[(record.scope_id, record.key)]
    if many:
        wanted = normalise_value(record.value)
        slot = [r for r in slot if r.status != "forgotten" and normalise_value(r.value) == wanted]
    tombstones = [t for t in locked.state.tombstones if t.key == record.key]
    winner = resolver.resolve_slot(
        slot, locked.now, tombstones=tombstones, many=many, secret=locked.secret
    )
    if winner is None or winner.id != record.id:
        raise Conflict("Only a memory that is current can be confirmed or corrected.")


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
    A record that already has the user's authority stays as it is (`unchanged`)."""
    with transaction.atomic():
        locked = _lock_record(record_id, user)
        _require_active_now(locked)
        return _confirm_locked(locked)


def _confirm_locked(locked: _Locked) -> AssertResult:
    record = locked.record
    if record.authority_rank >= AUTHORITY_RANK["user-confirmed"]:
        return AssertResult("unchanged", record, state=RecordState("active"))  # checked active
    fact = _user_fact(locked, value=record.value, authority="user-confirmed", supersedes=record.id)
    [result] = _write_facts(
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
    asserted. The same value (normalised as in §1) is a confirm."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("A value must not be empty.", field="value")
    if len(value) > VALUE_MAX:
        raise ValidationError(f"At most {VALUE_MAX} characters.", field="value")
    with transaction.atomic():
        locked = _lock_record(record_id, user)
        _require_active_now(locked)
        record = locked.record
        if normalise_value(value) == normalise_value(record.value):
            return _confirm_locked(locked)
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
        record = _domain(row, owner.username)
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


# ---------------------------------------------------------------------------------------------
# Normalisation (W12)


def memory_normalise(*, user=None, now: datetime | None = None, batch_users: int = 200) -> int:
    """W12: write stored statuses (`expired`, `superseded`) from the pure plan. Idempotent and
    safe at any time: each user is done in its own transaction under the user's lock, and the
    plan marks chains oldest first, so a partial run leaves a consistent state."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    users = (
        User.objects.filter(pk=user.pk)
        if user is not None
        else User.objects.filter(memories__isnull=False).distinct()
    )
    changed = 0
    for u in users.iterator(chunk_size=batch_users):
        with transaction.atomic():
            lock_profile(u)
            at = now or db_now()
            records = records_to_domain(MemoryRecord.objects.filter(user=u), u.username)
            for change in normalisation.plan_normalisation(records, at):
                MemoryRecord.objects.filter(pk=change.id, user=u).exclude(
                    status="forgotten"
                ).update(status=change.status, status_since=change.status_since)
                changed += 1
    log.info("memory_normalise changed=%d", changed)
    return changed


def profile_set_time_zone(*, user, time_zone: str) -> MemoryProfile:
    """The zone the pages show this user's times in: an IANA name, or "" for the product's
    (`settings.TIME_ZONE`)."""
    if not isinstance(time_zone, str) or (time_zone and time_zone not in known_time_zones()):
        raise ValidationError("Choose a time zone from the list.", field="time_zone")
    with transaction.atomic():
        profile = lock_profile(user)
        if profile.time_zone != time_zone:
            profile.time_zone = time_zone
            profile.save(update_fields=["time_zone"])
    return profile


def ensure_profile(user) -> MemoryProfile:
    profile, _ = MemoryProfile.objects.get_or_create(user=user)
    return profile


def memory_settings_set(
    *, user, changed_by: str, learn: bool | None = None, use: bool | None = None
) -> MemorySettings:
    """I8: switch learning and/or memory use on or off for `user` (`None` leaves a switch as
    it is). A change records when (database clock) and through what (`user` on the pages,
    `api`, `support`) for support to see; setting a switch to the value it has changes
    nothing and records nothing. Neither switch deletes anything."""
    if changed_by not in SETTINGS_CHANGED_BY:
        raise ValidationError("Unknown origin of the change.", field="changed_by")
    for name, value in (("learn", learn), ("use", use)):
        if value is not None and not isinstance(value, bool):
            raise ValidationError("Must be true or false.", field=name)
    with transaction.atomic():
        profile = lock_profile(user)
        wanted = {"learn": learn, "use": use}
        changed = [
            name
            for name, value in wanted.items()
            if value is not None and getattr(profile, name) != value
        ]
        if changed:
            for name in changed:
                setattr(profile, name, wanted[name])
            profile.settings_changed_at = db_now()
            profile.settings_changed_by = changed_by
            profile.save(update_fields=[*changed, "settings_changed_at", "settings_changed_by"])
            changes.settings_changed(user, profile)  # V1
            log.info(
                "memory_settings_set user_id=%s learn=%s use=%s changed_by=%s",
                user.pk,
                profile.learn,
                profile.use,
                changed_by,
            )
    # Later reads in this request see the new switches.
    user.memory_profile = profile
    return settings_of_profile(profile)
