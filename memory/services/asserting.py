"""The write path (SPEC §1, W1–W9): `memory_assert`, and the decided write plan written as rows,
which every writer of memory records goes through (`memory.services.teaching` for what a
text teaches, the user's actions on a record, `memory.state` for a turn's writes).

Serialisation: writes of one user take a row lock on that user's MemoryProfile (`lock_profile`).
That makes the check-then-write steps of W2, W5 and W8 race-free (concurrent writers never
duplicate a version, and one idempotency key stores one record), and the unique constraint on
(user, scope_id, key, version) stays as a backstop."""

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
from config.errors import IdempotencyKeyReused, ValidationError
from config.storage import RowWriter
from conversations.models import Character, Conversation, Message
from conversations.scopes import SCOPE_KINDS, USER_SCOPE_COLUMNS, Scope

from .. import learning
from ..domain import REASON_PAUSED, RecordState, loggable_key
from ..domain import MemoryRecord as DomainRecord
from ..models import IdempotencyRecord, MemoryProfile, MemoryRecord
from ..plan_rows import add_plan_rows
from ..selectors.records import records_to_domain
from ..selectors.states import memory_states
from ..state import slots_state
from ..write_rules import Fact, Known, Retract, WritePlan, check_fields, plan_writes

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


def domain_record(record: MemoryRecord, username: str) -> DomainRecord:
    """A stored row as a pure-core record, its sources included."""
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
    agent: tuple[str, ...] = (),
) -> AssertResult:
    """Write a memory: W1 validate, W2 idempotency, I8 the `learn` switch, W3 tombstones, W4
    retractions, W5 unchanged values, W6 store (with W7 authority, W8 versions, W9
    out-of-order writes).

    I8: while the user's `learn` switch is off, a `model-inferred` or `rule-extracted` write
    stores nothing (outcome `blocked`, reason `paused`, like W3); the user's own authorities
    still write. The switch is read from the profile row the write lock takes anyway.
    `agent`: the connection writing, (id, name) (SPEC §15 M3): any live tombstone of its key
    and scope blocks its write, whatever its evidence time, and what it stores is told by it."""
    # W1: everything that can be checked without the lock, so bad input stores nothing.
    check_fields(
        key=key,
        value=value,
        authority=authority,
        confidence=confidence,
        valid_from=valid_from,
        valid_until=valid_until,
    )
    if idempotency_key is not None and not (1 <= len(idempotency_key) <= 255):
        raise ValidationError("1–255 characters.", field="idempotency_key")
    asked = _Asked(
        key,
        value,
        scope,
        authority,
        float(confidence),
        valid_from,
        valid_until,
        sorted({str(s) for s in sources}),
        str(supersedes) if supersedes else None,
        agent,
    )
    with transaction.atomic():
        return _memory_assert_locked(user, asked, idempotency_key)


@dataclass(frozen=True)
class _Asked:
    """One assert as asked, W1 passed: what W2's payload is the hash of and the fact of W3–W9
    is made of. `source_ids`: the source message ids, sorted and each once."""

    key: str
    value: str
    scope: Scope
    authority: str
    confidence: float
    valid_from: datetime | None
    valid_until: datetime | None
    source_ids: list[str]
    supersedes: str | None
    agent: tuple[str, ...]

    def payload(self) -> dict:
        """W2: what an idempotency key stands for (the writing connection is not part of it)."""
        return {
            "key": self.key,
            "value": self.value,
            "scope": self.scope.as_dict(),
            "authority": self.authority,
            "confidence": self.confidence,
            "valid_from": self.valid_from,
            "valid_until": self.valid_until,
            "sources": self.source_ids,
            "supersedes": self.supersedes,
        }


def log_memory_write(result, *, key: str, scope_kind: str, authority: str, sources: int) -> None:
    """SPEC §12: ids, counts and a loggable key only — never a value. `result`: the write's
    answer (`AssertResult`, or the pure core's `Outcome`), its `outcome` and `reason` read."""
    log.info(
        "memory_assert outcome=%s key=%s scope_kind=%s authority=%s sources=%d",
        result.outcome,
        loggable_key(key),
        scope_kind,
        authority,
        sources,
    )
    if result.outcome == "blocked":
        metrics.write_blocked(result.reason)


def log_learned(item, result, *, agent: tuple[str, ...] = (), sources: int) -> None:
    """`log_memory_write` for a finding a text taught (§8): its key, and the scope and
    authority of the record it left, or the user scope and the authority it asked for."""
    record = result.record
    log_memory_write(
        result,
        key=item.key,
        scope_kind=record.scope.kind if record else "user",
        authority=record.authority if record else learning.authority_of(item, agent),
        sources=sources,
    )


def _memory_assert_locked(user, asked: _Asked, idempotency_key: str | None) -> AssertResult:
    scope_fields = _scope_row_fields(user, asked.scope)
    source_ids = asked.source_ids
    messages = list(Message.objects.filter(user=user, pk__in=source_ids)) if source_ids else []
    if len(messages) != len(source_ids):
        raise ValidationError("Every source must be a message of this user.", field="sources")
    profile = lock_profile(user)
    secret = profile.secret_bytes()
    now = db_now()

    # W2: idempotency — the same key and payload replays, another payload is a conflict.
    payload_hmac = None
    if idempotency_key is not None:
        payload_hmac = _payload_hmac(secret, asked.payload())
        previous = IdempotencyRecord.objects.filter(user=user, key=idempotency_key).first()
        if previous is not None:
            if not hmac.compare_digest(previous.payload_hmac, payload_hmac):
                raise IdempotencyKeyReused("This idempotency key was used with another payload.")
            record = domain_record(previous.record, user.username) if previous.record_id else None
            state = memory_states(user, [record], now=now)[record.id] if record else None
            return AssertResult(
                "replayed",
                record,
                previous.reason or None,
                {"original_outcome": previous.outcome},
                state=state,
            )

    if asked.authority in LEARNED_AUTHORITIES and not profile.learn:
        result = AssertResult("blocked", None, REASON_PAUSED)
    else:
        result = _assert_core(
            user,
            asked,
            scope_fields=scope_fields,
            messages=messages,
            secret=secret,
            now=now,
            profile=profile,
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
    log_memory_write(
        result,
        key=asked.key,
        scope_kind=asked.scope.kind,
        authority=asked.authority,
        sources=len(messages),
    )
    return result


def _assert_core(
    user, asked: _Asked, *, scope_fields, messages, secret, now, profile
) -> AssertResult:
    """W3–W9 for one assert: a batch of one (`memory.write_rules`), read and written like any."""
    scope_id = asked.scope.scope_id(user.username)
    state = slots_state(user, [(scope_id, asked.key)], profile=profile)
    fact = Fact(
        key=asked.key,
        value=asked.value,
        scope=asked.scope,
        authority=asked.authority,
        many=asked.key in state.many_keys,
        confidence=asked.confidence,
        valid_from=asked.valid_from,
        valid_until=asked.valid_until,
        sources=tuple(str(m.pk) for m in messages),
        source_time=max(m.created_at for m in messages) if messages else None,
        supersedes=asked.supersedes,
        agent=asked.agent,
    )
    [result] = write_facts(
        user, state, [fact], secret=secret, now=now, scope_fields={scope_id: scope_fields}
    )
    return result


def write_facts(
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
    """Decide `writes` with the pure W-steps (`memory.write_rules.plan_writes`) against `state`
    (read under the user's lock, which the caller holds) and write what they decided: the new
    rows, their source links and W5's, W5's confidence raises, W10's closed windows and
    retraction rows — through `writer` when the caller gathers its transaction's writes, else
    written here. `scope_fields` gives the row fields of each scope id other than the user
    scope (`scope_kind`, `character_id`, `conversation_id`, `scene`)."""
    plan = plan_writes(
        writes,
        Known(state.records, state.tombstones, state.retractions),
        user=user.username,
        now=now,
        secret=secret,
        new_id=lambda: str(uuid.uuid4()),
    )
    own = writer is None
    writer = RowWriter() if own else writer
    add_plan_rows(writer, user, plan, scope_fields or {})
    if own:
        writer.flush()
    return plan


def row_scope_fields(row: MemoryRecord) -> dict:
    """A stored record's scope columns, for new rows of its scoped key."""
    return {column: getattr(row, column) for column in USER_SCOPE_COLUMNS}
