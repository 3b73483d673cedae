"""A turn's stored plan (SPEC §7, `conversations.plan_snapshot`) read back into rows for the
admin's turn page: what was remembered, left out and decided, with private text only inside a
reveal (S1). What was left out is listed as the plan listed it (at most 20 per kind and reason
since I9, every entry before) with each total counted, so a row says "and N more" where the
plan counted more than it listed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from conversations.models import Message
from conversations.plan_snapshot import PlanSnapshot
from memory.models import MemoryRecord
from memory.selectors.records import registry
from policy.models import DecisionLog

from .. import words
from ..display import has_free_part, page_label
from .actions import as_uuids

# ---------------------------------------------------------------------------------------------
# A turn's prompt plan, as support reads it


@dataclass
class PlanItem:
    """One memory or message of a stored plan: ids and what they stand for, never text unless
    `value` was revealed (memories only, with `view_private_text`)."""

    kind: str  # "memory" or "message"
    id: str
    key: str = ""  # memory
    label: str = ""
    scope_id: str = ""
    authority: str = ""
    value: str | None = None  # None: not shown (masked); "" : erased since
    erased_at: datetime | None = None  # when it was forgotten (its value erased)
    gone: bool = False  # the record or message no longer exists (its conversation was deleted)
    seq: int | None = None  # message
    role: str = ""
    reason: str = ""  # left out: the planner's reason code
    words: str = ""  # left out: the reason in words


@dataclass(frozen=True)
class NotListed:
    """I9: entries of one kind left out for one reason that the plan counted but did not
    list."""

    kind: str  # "memory" or "message"
    reason: str  # the planner's reason code
    count: int
    words: str  # the reason in words

    @property
    def what(self) -> str:
        """What is not listed, in words: "37 more messages", "1 more memory"."""
        one, many = KIND_NOUNS.get(self.kind, (self.kind, self.kind))
        return f"{self.count} more {one if self.count == 1 else many}"


KIND_NOUNS = {"memory": ("memory", "memories"), "message": ("message", "messages")}


@dataclass
class TurnPlan:
    """A turn's last prompt plan (its snapshot, SPEC §7), read back for support: the memories
    and messages it gave the model, what it left out and why, and the policy decisions."""

    turn: object
    now: datetime | None
    params: dict
    estimated_tokens: int | None
    plan_hash: str
    current: PlanItem | None
    history: list[PlanItem]
    memories: list[PlanItem]
    left_out: list[PlanItem]
    decisions: list[dict]  # {"id", "capability", "effect", "reason", "words"}
    revealed: list[str]  # ids of the memories whose value is shown
    reveal: bool = False  # inside a reveal of the turn's user: values and whole keys show
    not_listed: list[NotListed] = field(default_factory=list)  # I9: "and N more"
    left_out_total: int = 0  # every entry left out, listed or not

    @property
    def shown(self) -> int:
        """How many memories' private text (a value, a key's free part) the plan shows."""
        if not self.reveal:
            return 0
        items = [*self.memories, *self.left_out]
        keyed = {i.id for i in items if i.kind == "memory" and has_free_part(i.key)}
        return len(keyed | set(self.revealed))

    @property
    def exists(self) -> bool:
        return bool(self.plan_hash)


def _parse_time(text) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def turn_plan_time(turn) -> datetime:
    """The time a turn's plan was made for (the snapshot's `now`), or when the turn was made."""
    snapshot = PlanSnapshot.of(turn.plan_snapshot)
    return (_parse_time(snapshot.now) if snapshot else None) or turn.created_at


def turn_plan(turn, *, reveal: bool) -> TurnPlan:
    """Read a turn's plan snapshot back into rows: four queries whatever its size (memory
    records, key labels, messages, decisions). Values only when `reveal` (inside a reveal of
    the turn's user); the caller logs the page (`shown`)."""
    snapshot = PlanSnapshot.of(turn.plan_snapshot) or PlanSnapshot()
    excluded = snapshot.excluded
    memory_ids = snapshot.memory_ids()
    message_ids = list(
        dict.fromkeys(
            [
                *([snapshot.current] if snapshot.current else []),
                *snapshot.history,
                *(i for kind, i, _ in excluded if kind == "message"),
            ]
        )
    )
    fields = [
        "id",
        "key",
        "scope_id",
        "authority",
        "status",
        "status_since",
        *(["value"] if reveal else []),
    ]
    records = (
        {
            str(row["id"]): row
            for row in MemoryRecord.objects.filter(
                user_id=turn.user_id, pk__in=as_uuids(memory_ids)
            ).values(*fields)
        }
        if memory_ids
        else {}
    )
    labels = registry({row["key"] for row in records.values()}) if records else None
    messages = (
        {
            str(pk): (seq, role)
            for pk, seq, role in Message.objects.filter(
                conversation_id=turn.conversation_id, pk__in=as_uuids(message_ids)
            ).values_list("pk", "seq", "role")
        }
        if message_ids
        else {}
    )
    revealed: list[str] = []

    def memory(record_id: str, reason: str = "") -> PlanItem:
        row = records.get(record_id)
        item = PlanItem("memory", record_id, reason=reason, words=words.plan_reason_words(reason))
        if row is None:
            item.gone = True
            return item
        item.key, item.scope_id, item.authority = row["key"], row["scope_id"], row["authority"]
        item.label = page_label(labels.labels, row["key"])
        if row["status"] == "forgotten":
            item.value, item.erased_at = "", row["status_since"]
        elif reveal and not reason:  # values of what the model was given; left-out rows show none
            item.value = row["value"]
            revealed.append(record_id)
        return item

    def message(message_id: str, reason: str = "") -> PlanItem:
        found = messages.get(message_id)
        item = PlanItem("message", message_id, reason=reason, words=words.plan_reason_words(reason))
        if found is None:
            item.gone = True
        else:
            item.seq, item.role = found
        return item

    decision_ids = as_uuids(snapshot.decisions)
    decisions = (
        [
            {
                "id": str(pk),
                "capability": capability,
                "effect": effect,
                "reason": reason,
                "words": words.decision_words(reason),
            }
            for pk, capability, effect, reason in DecisionLog.objects.filter(
                user_id=turn.user_id, pk__in=decision_ids
            )
            .order_by("capability")
            .values_list("pk", "capability", "effect", "reason")
        ]
        if decision_ids
        else []
    )
    return TurnPlan(
        turn=turn,
        now=_parse_time(snapshot.now),
        params=dict(snapshot.params),
        estimated_tokens=snapshot.estimated_tokens,
        plan_hash=turn.plan_hash or "",
        current=message(snapshot.current) if snapshot.current else None,
        history=[message(i) for i in snapshot.history],
        memories=[memory(i) for i in snapshot.memories],
        left_out=[
            memory(i, reason) if kind == "memory" else message(i, reason)
            for kind, i, reason in excluded
        ],
        decisions=decisions,
        revealed=revealed,
        reveal=reveal,
        not_listed=[
            NotListed(kind, reason, n, words.plan_reason_words(reason))
            for kind, reason, n in snapshot.not_listed()
        ],
        left_out_total=sum(snapshot.left_out_counts().values()),
    )
