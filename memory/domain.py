"""Memory domain types (SPEC §1, §3, §4). Standard library only (DESIGN habit 1): the clock,
ids and secrets come in as arguments, so everything here is deterministic and testable
without a database."""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from conversations.scopes import Scope

# ---------------------------------------------------------------------------------------------
# Vocabulary

AUTHORITIES = ("model-inferred", "rule-extracted", "user-confirmed", "user-corrected")
AUTHORITY_RANK = {name: rank for rank, name in enumerate(AUTHORITIES)}
USER_AUTHORITIES = frozenset({"user-confirmed", "user-corrected"})

STATUSES = ("active", "superseded", "expired", "forgotten")
CARDINALITIES = ("one", "many")

# Resolver reasons (§3), projection reasons (§5) and the planner's (§7).
REASON_SCOPE = "scope"
REASON_FORGOTTEN = "forgotten"
REASON_NOT_YET_VALID = "not-yet-valid"
REASON_EXPIRED = "expired"
REASON_SUPERSEDED = "superseded"
REASON_LOWER_PRECEDENCE = "lower-precedence"
REASON_UNSUPPORTED = "unsupported"
REASON_LOW_CONFIDENCE = "low-confidence"
REASON_SHADOWED = "shadowed"
REASON_BUDGET = "budget"
REASON_MEMORY_OFF = "memory-off"  # I8: the user switched `use` off
# F7.2: a record a forget withholds in this context (it holds a purged value; not purged).
REASON_WITHHELD = "withheld"
# I8: a write blocked because the user switched `learn` off (an outcome reason, not a resolver one).
REASON_PAUSED = "paused"

# Bumped whenever a change to the resolver or projection could change a result.
RESOLVER_VERSION = "resolver-2026.11.1"

KEY_RE = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*$")
KEY_MAX = 120
VALUE_MAX = 2000


def valid_key(key: str) -> bool:
    """SPEC §1: 1–120 chars of [a-z0-9_.-], no leading, trailing or double dot."""
    return 0 < len(key) <= KEY_MAX and KEY_RE.match(key) is not None


def scope_covers(scope_id: str, *, character: str | None, conversation: str | None) -> bool:
    """F6's scope mapping, for a context: a tombstone of `user` or `*` scope covers every
    context; of a `character` scope, the contexts with that character; of a `conversation` or
    `scene` scope, the contexts in that conversation (whatever their scene)."""
    kind = "*" if scope_id == "*" else scope_id.split(":", 1)[0]
    if kind in ("*", "user"):
        return True
    if kind == "character":
        return character is not None and scope_id.rsplit(":", 1)[1] == character
    return conversation is not None and scope_id.split(":")[1] == conversation


# Key families whose keys carry a free part taken from what the user said (SPEC §12), by the
# family's first segment and the position of the free segment: the extractor's people rules
# write `people.<person>.<attribute>` (§8), and a person's name is private text.
KEY_FREE_PARTS = {"people": 1}


def loggable_key(key) -> str:
    """SPEC §12: a key as it may appear in a log line or a metric: the free part of a family
    that has one is masked (`people.priya.works_at` → `people.*.works_at`). Anything that is not
    a valid key is never echoed. The one function every log line naming a key goes through."""
    if not isinstance(key, str) or not valid_key(key):
        return "<invalid-key>"
    parts = key.split(".")
    free = KEY_FREE_PARTS.get(parts[0])
    if free is not None and len(parts) > free:
        parts[free] = "*"
    return ".".join(parts)


def normalise_value(value: str) -> str:
    """casefold(strip(NFC(value))): how a value is compared everywhere (§1)."""
    return unicodedata.normalize("NFC", value).strip().casefold()


def value_hash(secret: bytes, value: str) -> str:
    """F1: a keyed hash of the normalised value, so a forgotten value can be blocked without
    being kept. The per-user secret makes equal values of different users unlinkable."""
    return hmac.new(secret, normalise_value(value).encode("utf-8"), hashlib.sha256).hexdigest()


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A stored memory record, as the pure core sees it (SPEC §1).

    `sources` are the ids of the source messages that still exist; `evidence_time` was fixed
    at write and does not change when a source is deleted. `withheld_by`: the ids of the
    tombstones withholding the record (F7.2), each in the contexts its scope covers.
    `told_by`: the connection that stored it, (id, name), or empty (SPEC §15 M3)."""

    id: str
    user: str
    key: str
    value: str
    scope: Scope
    authority: str
    valid_from: datetime
    recorded_at: datetime
    evidence_time: datetime
    version: int
    status: str = "active"
    status_since: datetime | None = None
    confidence: float = 1.0
    valid_until: datetime | None = None
    supersedes: str | None = None
    retracted_at: datetime | None = None
    sources: tuple[str, ...] = ()
    withheld_by: tuple[str, ...] = ()
    told_by: tuple[str, ...] = ()

    @property
    def scope_id(self) -> str:
        return self.scope.scope_id(self.user)

    @property
    def authority_rank(self) -> int:
        return AUTHORITY_RANK[self.authority]

    def value_slot(self, many: bool) -> str:
        """The slot within the scoped key: the normalised value for a `many` key, else ''."""
        return normalise_value(self.value) if many else ""


@dataclass(frozen=True, slots=True)
class Tombstone:
    """F1: a forget. Never holds the value; `value_hash` only for a value-level forget."""

    id: str
    user: str
    scope_id: str  # a scope id, or "*" for every scope of the user
    key: str
    forgotten_at: datetime
    blocks_sources_before: datetime
    value_hash: str | None = None

    def blocks(
        self,
        *,
        user: str,
        key: str,
        scope_id: str,
        evidence_time: datetime,
        hashed_value: str | None,
    ) -> bool:
        """F3: same user and key, covering scope, matching value hash if any, and evidence
        no newer than the forget."""
        return (
            self.user == user
            and self.key == key
            and (self.scope_id == "*" or self.scope_id == scope_id)
            and (self.value_hash is None or self.value_hash == hashed_value)
            and evidence_time <= self.blocks_sources_before
        )


@dataclass(frozen=True, slots=True)
class Exclusion:
    id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """R8: which step decided a record and why. `detail` names the winning or superseding
    record, or says which boundary or tombstone applied."""

    id: str
    step: str  # "R1".."R6", or "active"
    reason: str  # a reason, or "active"
    detail: str

    def as_dict(self) -> dict:
        return {"id": self.id, "step": self.step, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class Resolution:
    """SPEC §3's answer. `excluded` is a sequence of `Exclusion`s by id (the resolver's is a
    `memory.reasons.Exclusions`, made when read, equal to the tuple it stands for);
    `explanations` a mapping of id → `Explanation` (the resolver's formats each one when it
    is looked up)."""

    active: tuple[MemoryRecord, ...]
    excluded: Sequence[Exclusion]
    trace: dict
    explanations: Mapping[str, Explanation] = field(default_factory=dict)

    def explain(self, record_id: str) -> Explanation | None:
        return self.explanations.get(record_id)


# E1: the effective states of a record, in the resolver's step order (R2–R6), "active" first.
STATE_ACTIVE = "active"
STATES = (
    STATE_ACTIVE,
    REASON_NOT_YET_VALID,
    REASON_EXPIRED,
    REASON_FORGOTTEN,
    REASON_SUPERSEDED,
    REASON_LOWER_PRECEDENCE,
)


@dataclass(frozen=True, slots=True)
class RecordState:
    """SPEC E1: a record's resolution at a time in its own scope — the resolver's reason (or
    "active") and the R8 detail as `{"rule", "by", "since"}`: the step that decided it
    ("R2".."R6", None when active), the memory that superseded or outranked it (R5, R6), and
    since when the state holds, when the record says so (None otherwise)."""

    state: str
    rule: str | None = None
    by: str | None = None
    since: datetime | None = None


@dataclass(frozen=True, slots=True)
class ProjectedMemory:
    """P4: what the model is given. `record` stays out of the prompt (debug only)."""

    key: str
    label: str
    value: str
    certainty: str  # confirmed | likely | uncertain
    scope: Scope
    record: MemoryRecord

    def as_prompt(self) -> dict:
        return {
            "key": self.key,
            "label": self.label,
            "value": self.value,
            "certainty": self.certainty,
            "scope": self.scope.as_dict(),
        }


@dataclass(frozen=True)
class Projection:
    """SPEC §5's answer: `excluded` as `Resolution.excluded` is (the projection's is made
    when read)."""

    prompt: tuple[ProjectedMemory, ...]
    excluded: Sequence[Exclusion]


def default_label(key: str) -> str:
    """A readable label for a key the registry does not know: `people.marcus.lives_in` →
    "Marcus: lives in"; `story.lantern.status` → "Story lantern: status"."""
    parts = key.split(".")
    if len(parts) == 1:
        return parts[0].replace("_", " ").capitalize()
    head = " ".join(parts[:-1]).replace("_", " ")
    if parts[0] == "people" and len(parts) >= 3:
        head = " ".join(parts[1:-1]).replace("_", " ").title()
    else:
        head = head.capitalize()
    return f"{head}: {parts[-1].replace('_', ' ')}"


def r6_beats(a: MemoryRecord, b: MemoryRecord) -> bool:
    """R6, the one order between two records of a slot: higher authority, then later
    valid_from, then higher version, then the smaller id (a deterministic tie-break, not a
    business rule). The resolver (R6) and the projection (P3, after scope) both use it."""
    rank_a, rank_b = AUTHORITY_RANK[a.authority], AUTHORITY_RANK[b.authority]
    if rank_a != rank_b:
        return rank_a > rank_b
    if a.valid_from != b.valid_from:
        return a.valid_from > b.valid_from
    if a.version != b.version:
        return a.version > b.version
    return a.id < b.id
