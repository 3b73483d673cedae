"""Boundary-policy domain types (SPEC §6). Standard library only (DESIGN habit 1): rules,
contexts and the clock come in as values, so the engine is deterministic and testable without
a database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from conversations.domain import Context
from conversations.scopes import Scope, scope_applies, scope_ids_of

# ---------------------------------------------------------------------------------------------
# Vocabulary

EFFECTS = ("allow", "deny", "ask")

# D3: source is the first ranking criterion, lowest authority first.
SOURCES = ("product-default", "confirmed-inference", "explicit-user")
SOURCE_RANK = {name: rank for rank, name in enumerate(SOURCES)}
PRODUCT_DEFAULT = "product-default"
EXPLICIT_USER = "explicit-user"

# D3: scope specificity, widest first (scene > conversation > character > global).
SCOPE_KINDS = ("global", "character", "conversation", "scene")
SCOPE_RANK = {name: rank for rank, name in enumerate(SCOPE_KINDS)}
# A product default has no user, so it can only be global or per character (SPEC §6).
DEFAULT_SCOPE_KINDS = ("global", "character")

REQUESTERS = ("user", "assistant", "automation")

# D8: how long an answer to an ASK is remembered.
REMEMBER = ("once", "scene", "conversation", "character", "global")
ANSWERS = ("allow", "deny")

# D2/D4: decision reasons (stable codes, part of the API).
REASON_EXPLICIT_RULE = "explicit-rule"
REASON_CONFLICTING_RULES = "conflicting-rules"
REASON_NO_APPLICABLE_RULE = "no-applicable-rule"
DECISION_REASONS = (REASON_EXPLICIT_RULE, REASON_CONFLICTING_RULES, REASON_NO_APPLICABLE_RULE)

# explain(): why a rule was or was not a candidate (D1, D5), and where a candidate ranked (D4).
WHY_WRONG_CAPABILITY = "wrong-capability"
WHY_SCOPE = "scope"
WHY_REQUESTER = "requester"
WHY_REVOKED = "revoked"
WHY_EXPIRED = "expired"
WHY_NOT_YET_VALID = "not-yet-valid"
WHY_OUTRANKED = "outranked"
WHY_TIED = "tied"
WHY_DECIDED = "decided"
EXPLAIN_REASONS = (
    WHY_WRONG_CAPABILITY,
    WHY_SCOPE,
    WHY_REQUESTER,
    WHY_REVOKED,
    WHY_EXPIRED,
    WHY_NOT_YET_VALID,
    WHY_OUTRANKED,
    WHY_TIED,
    WHY_DECIDED,
)

# check_rules(): why a rule can never decide anything again.
DEAD_REVOKED = "revoked"
DEAD_EXPIRED = "expired"
DEAD_SHADOWED = "shadowed"

# D9: media-job lifecycle.
JOB_QUEUED = "queued"
JOB_NEEDS_CONFIRMATION = "needs-confirmation"
JOB_REJECTED = "rejected"
JOB_RUNNING = "running"
JOB_CANCELLED = "cancelled"
JOB_DONE = "done"
JOB_STATUSES = (
    JOB_QUEUED,
    JOB_NEEDS_CONFIRMATION,
    JOB_REJECTED,
    JOB_RUNNING,
    JOB_CANCELLED,
    JOB_DONE,
)
# D9: the status a job is admitted with, by the decision's effect.
ADMISSION_STATUS = {"allow": JOB_QUEUED, "ask": JOB_NEEDS_CONFIRMATION, "deny": JOB_REJECTED}
# A job's reason when the user answered its ASK with "deny" (D8).
JOB_REASON_USER_DENIED = "user-denied"

# Media jobs exist only for capabilities of this family (decision recorded in the README).
MEDIA_PREFIX = "media."


def is_media_capability(name: str) -> bool:
    return name.startswith(MEDIA_PREFIX)


def job_reason(decision: Decision) -> str:
    """A media job's `reason`: the decision that set its status, as `<effect>:<reason>`
    (`deny:explicit-rule`, `ask:no-applicable-rule`), so the runtime can tell a denial from a
    lapse without a second call."""
    return f"{decision.effect}:{decision.reason}"


# ---------------------------------------------------------------------------------------------
# Scopes, rules and contexts


@dataclass(frozen=True, slots=True)
class PolicyScope(Scope):
    """A rule's scope (SPEC §6): global · character · conversation · scene — a scope as memory's
    are (`conversations.scopes`), its widest kind named `global`, ranked for D3."""

    @property
    def rank(self) -> int:
        return SCOPE_RANK[self.kind]

    def label(self) -> str:
        """A short, text-free description for explanations (ids only)."""
        if self.kind == "global":
            return "global"
        if self.kind == "character":
            return f"character {self.character}"
        if self.kind == "conversation":
            return f"conversation {self.conversation}"
        return f"scene {self.conversation}:{self.scene}"


@dataclass(frozen=True, slots=True)
class Rule:
    """One version of a boundary rule (SPEC §6). `user` is None for a product default.
    Rules are immutable: a change revokes this one and creates its successor."""

    id: str
    user: str | None
    capability: str
    effect: str
    source: str
    scope: PolicyScope
    valid_from: datetime
    requested_by: str | None = None
    valid_until: datetime | None = None
    revoked_at: datetime | None = None
    version: int = 1

    @property
    def is_default(self) -> bool:
        return self.user is None

    @property
    def tier(self) -> tuple[int, int]:
        """D3/D4: (source rank, scope specificity); a higher tuple outranks a lower one."""
        return (SOURCE_RANK[self.source], self.scope.rank)

    def lapse(self, now: datetime) -> str | None:
        """D1/D5: why the rule is not in force at `now`, or None when it is. Revocation is
        checked first: it is a decision about the rule, expiry only a boundary of it."""
        if self.revoked_at is not None and self.revoked_at <= now:
            return WHY_REVOKED
        if self.valid_until is not None and self.valid_until <= now:
            return WHY_EXPIRED
        if self.valid_from > now:
            return WHY_NOT_YET_VALID
        return None

    @property
    def ends_at(self) -> datetime | None:
        """The first instant the rule no longer applies, whether by expiry or revocation."""
        ends = [t for t in (self.valid_until, self.revoked_at) if t is not None]
        return min(ends) if ends else None


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    capability: str
    requested_by: str


@dataclass(frozen=True, slots=True)
class PolicyContext:
    """What a decision is made for (SPEC §0): ids only, and the valid time `now`."""

    user: str
    now: datetime
    character: str | None = None
    conversation: str | None = None
    scene: str | None = None

    @classmethod
    def of(cls, context: Context) -> PolicyContext:
        """The policy's view of a resolution's context (the same place, the same `now`)."""
        return cls(
            user=context.user,
            now=context.now,
            character=context.character,
            conversation=context.conversation,
            scene=context.scene,
        )

    def matches(self, rule: Rule) -> bool:
        """D1's scope test (as R1): `global` matches the rule's user, or everyone for a product
        default; the narrower kinds need the same character, conversation or scene."""
        if rule.user is not None and rule.user != self.user:
            return False
        return scope_applies(rule.scope, self.character, self.conversation, self.scene)

    @property
    def scope_ids(self) -> tuple[str, ...]:
        """The scope ids (SPEC §1) this context covers, widest first: what D10 logs."""
        return tuple(scope_ids_of(self.user, self.character, self.conversation, self.scene))


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True)
class Decision:
    """D2/D4: the effect, a stable reason code and the rules that determined it (sorted)."""

    effect: str
    reason: str
    rule_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RuleExplanation:
    """explain(): why one rule was or was not a candidate, or where it ranked. `detail` holds
    ids, kinds and times only, never text."""

    rule_id: str
    reason: str
    detail: str

    def as_dict(self) -> dict:
        return {"rule_id": self.rule_id, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class Explanation:
    decision: Decision
    rules: tuple[RuleExplanation, ...]

    def reason_of(self, rule_id: str) -> str | None:
        for item in self.rules:
            if item.rule_id == rule_id:
                return item.reason
        return None


@dataclass(frozen=True, slots=True)
class PolicyVersion:
    """D7: `{"defaults": n, "user": m}`; both only increase."""

    defaults: int = 0
    user: int = 0

    def as_dict(self) -> dict:
        return {"defaults": self.defaults, "user": self.user}


@dataclass(frozen=True, slots=True)
class RuleConflict:
    """check_rules(): equally ranked rules with different effects that are all candidates in
    some reachable context and are not outranked there."""

    capability: str
    rule_ids: tuple[str, ...]
    effects: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeadRule:
    """check_rules(): a rule that can never decide anything from `now` on, and why."""

    rule_id: str
    reason: str  # revoked | expired | shadowed
    by: str | None = None  # the shadowing rule


@dataclass(frozen=True)
class RuleCheck:
    conflicts: tuple[RuleConflict, ...] = ()
    dead: tuple[DeadRule, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.conflicts and not self.dead
