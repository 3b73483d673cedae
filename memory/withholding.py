"""Forgotten words leave the prompt (SPEC F6): which messages a forget withholds, written in
the forget's transaction, and the reads every surface shares.

A forget withholds
1. the source messages of every record it purges, wherever they are (the source links stay
   on the skeleton: they hold no value);
2. every message, of either role, created at or before `forgotten_at` in the conversations
   the tombstone's scope covers, that mentions a purged value as whole words
   (`memory.mentions`); read in keyset pages per conversation, never a query per message;
3. the reply to a turn created before the forget whose stored plan held a purged record or a
   message it withholds, or whose own message it withholds (F7.1: an answer to a forgotten
   question), when that reply is committed after the forget: a reply already
   committed then is linked at once, a reply still to come is held through its turn (a
   `Withholding` row naming the turn), so whichever of the reply and the forget commits
   first, the reply ends withheld.

A forget also withholds the user's other memory records (F7.2) whose value, label or key holds
a purged value as whole words (`memory.mentions.record_matcher`), with evidence at or before
`forgotten_at`, living in a context the tombstone's scope covers: a `MemoryWithholding` link,
applied in the contexts the scope covers (`memory.domain.scope_covers`), released by the
user's new evidence for the record after the forget.

A message or a memory is withheld while any tombstone withholds it: deleting a tombstone (F4)
releases only what no other one holds. Nothing here keeps or logs a value."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import (
    Case,
    Count,
    Exists,
    Func,
    OuterRef,
    Q,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Lower

from conversations.models import Conversation, Message, Turn
from conversations.plan_snapshot import PlanSnapshot

from .mentions import IGNORABLE, matcher, needle, record_matcher
from .models import MemoryRecord, MemorySource, MemoryWithholding, Tombstone, Withholding
from .selectors.records import registry

PAGE = 1000  # messages read per keyset page while matching words


@dataclass(frozen=True)
class Purged:
    """A record a forget purges, with its value as it was before the erasure (kept in memory
    for the forget's transaction only)."""

    id: str
    value: str


@dataclass(frozen=True)
class WithheldPlan:
    """What a forget withholds: message ids (parts 1 to 3), turns whose reply is still to
    come (part 3) and the ids of the user's other memory records (F7.2)."""

    messages: frozenset[str]
    replies_of: frozenset[str]
    memories: frozenset[str] = frozenset()


def conversations_of_scope(user, scope_id: str):
    """F6's scope mapping: `user` or `*` → every conversation of the user; `character` → the
    user's conversations with that character; `conversation` or `scene` → that one."""
    qs = Message.objects.filter(user=user)
    kind = "*" if scope_id == "*" else scope_id.split(":", 1)[0]
    if kind in ("*", "user"):
        return qs
    if kind == "character":
        return qs.filter(conversation__character__slug=scope_id.rsplit(":", 1)[1])
    conversation = scope_id.split(":")[1]
    return qs.filter(conversation_id=conversation)


def _mentioning(user, scope_id: str, at: datetime, values: Iterable[str]) -> set[str]:
    """Part 2: ids of the messages in the scope's conversations, created at or before `at`,
    that mention one of `values` as whole words. Keyset pages of `PAGE` rows in the order of
    the (conversation, seq) unique index; on PostgreSQL the database first drops the messages
    that cannot match (`_prefilter`), so only candidates travel."""
    values = list(values)
    found: set[str] = set()
    needles = sorted({n for n in (needle(v) for v in values) if n is not None})
    if not needles:
        return found  # values under 2 characters withhold through provenance alone
    match = matcher(values)
    messages = conversations_of_scope(user, scope_id).filter(created_at__lte=at)
    if connection.vendor == "postgresql":
        messages = messages.annotate(folded=folded_sql("content")).filter(_prefilter(needles))
    last = None
    while True:
        page = messages
        if last is not None:
            page = page.filter(
                Q(conversation_id__gt=last[0]) | Q(conversation_id=last[0], seq__gt=last[1])
            )
        rows = list(
            page.order_by("conversation_id", "seq").values_list(
                "id", "conversation_id", "seq", "content"
            )[:PAGE]
        )
        found.update(str(mid) for mid, _c, _s, content in rows if match(content))
        if len(rows) < PAGE:
            return found
        last = rows[-1][1], rows[-1][2]


class _NFKC(Func):
    """PostgreSQL's `normalize(text, NFKC)`."""

    template = "normalize(%(expressions)s, NFKC)"
    output_field = TextField()


class _DropIgnorable(Func):
    """The text without Unicode's default-ignorable code points (`memory.mentions.IGNORABLE`),
    as the matcher drops them."""

    function = "regexp_replace"
    output_field = TextField()

    def __init__(self, expression):
        ranges = "".join(chr(lo) if lo == hi else f"{chr(lo)}-{chr(hi)}" for lo, hi in IGNORABLE)
        super().__init__(expression, Value(f"[{ranges}]"), Value(""), Value("g"))


def folded_sql(field: str):
    """`lower(normalize(<field> without its ignorables, NFKC))`, the database's side of the
    matcher's normal form for `_prefilter`. A text of ASCII alone is its own NFKC form and
    holds no ignorable, so it is only lowered: normalising every text would cost most of a
    forget (F6's cost target)."""
    return Case(
        When(**{f"{field}__regex": r"[^\x01-\x7f]"}, then=Lower(_NFKC(_DropIgnorable(field)))),
        default=Lower(field),
        output_field=TextField(),
    )


def _prefilter(needles: list[str]) -> Q:
    """A condition every message that `memory.mentions` would match passes (a superset), for
    the database to apply first, on `folded` (`folded_sql`). A needle's words (its runs of
    letters, digits and marks, F7.4) each occur whole in the text's normal form, so for a
    needle of ASCII alone, its longest word must occur in `folded`: the ignorables are dropped
    there first as the matcher drops them, and `lower` agrees with case folding on ASCII.
    The one character outside ASCII that case folding turns into ASCII letters is the sharp
    s (ß, ẞ → ss), so a text holding one is always a candidate. A needle with other
    characters (accents, marks, scripts without spaces) is matched in Python alone."""
    if not all(n.isascii() for n in needles):
        return Q()  # no safe filter: every message of the scope is a candidate
    condition = Q(content__contains="ß") | Q(content__contains="ẞ")
    for n in needles:
        condition |= Q(folded__contains=max(n.split(" "), key=len))
    return condition


def plan_withholding(user, *, scope_id: str, at: datetime, purged: list[Purged]) -> WithheldPlan:
    """What a tombstone of `scope_id` forgotten at `at` withholds, given the records it purges
    (F6 parts 1 to 3). Reads only; `withhold` writes."""
    ids = [p.id for p in purged]
    messages: set[str] = set()
    if ids:
        messages.update(
            str(m)
            for m in MemorySource.objects.filter(memory_id__in=ids).values_list(
                "message_id", flat=True
            )
        )
    messages |= _mentioning(user, scope_id, at, [p.value for p in purged])
    replies_of: set[str] = set()
    if ids or messages:
        purged_ids = set(ids)
        turns = (
            Turn.objects.filter(user=user, created_at__lte=at)
            .filter(Q(reply_message__isnull=True) | Q(reply_message__created_at__gt=at))
            .values_list("id", "reply_message_id", "user_message_id", "plan_snapshot")
        )
        for turn_id, reply_id, asked, stored in turns:
            if not (str(asked) in messages or _plan_held(stored, purged_ids, messages)):
                continue
            if reply_id is None:
                replies_of.add(str(turn_id))
            else:
                messages.add(str(reply_id))
    memories = _memories_mentioning(user, scope_id, at, purged)
    return WithheldPlan(frozenset(messages), frozenset(replies_of), frozenset(memories))


def records_of_scope(scope_id: str) -> Q:
    """A filter on memory records keeping those that live in a context `scope_id` covers (F6's
    mapping): every record for `user` or `*`; for a character, the user's records, that
    character's and those of conversations with it; for a conversation or a scene, the user's
    records, those of the conversation's character and of the conversation (any scene)."""
    kind = "*" if scope_id == "*" else scope_id.split(":", 1)[0]
    if kind in ("*", "user"):
        return Q()
    if kind == "character":
        slug = scope_id.rsplit(":", 1)[1]
        return (
            Q(scope_kind="user") | Q(character__slug=slug) | Q(conversation__character__slug=slug)
        )
    conversation = scope_id.split(":")[1]
    return (
        Q(scope_kind="user")
        | Q(conversation_id=conversation)
        | Q(character__in=Conversation.objects.filter(pk=conversation).values("character"))
    )


def _memories_mentioning(user, scope_id: str, at: datetime, purged: list[Purged]) -> set[str]:
    """F7.2: the ids of the user's other records (not forgotten, not among `purged`) whose
    value, display label or key holds a purged value as whole words, with evidence at or
    before `at`, living in a context `scope_id` covers."""
    values = [p.value for p in purged if p.value]
    if not values:
        return set()
    match = record_matcher(values)
    rows = list(
        MemoryRecord.objects.filter(user=user, evidence_time__lte=at)
        .exclude(status="forgotten")
        .exclude(pk__in=[p.id for p in purged])
        .filter(records_of_scope(scope_id))
        .values_list("id", "key", "value")
    )
    if not rows:
        return set()
    keyed = registry({key for _, key, _ in rows})
    return {str(rid) for rid, key, value in rows if match(key, keyed.label(key), value)}


def _plan_held(stored, purged_ids: set[str], messages: set[str]) -> bool:
    """Whether a turn's stored plan held a purged record or a withheld message (part 3)."""
    snapshot = PlanSnapshot.of(stored)
    if snapshot is None:
        return False
    return bool(set(snapshot.memories) & purged_ids or set(snapshot.history) & messages)


def withhold(tombstone: Tombstone, plan: WithheldPlan) -> int:
    """Write the links of `plan` for `tombstone` (in the caller's transaction) and answer how
    many messages it withholds now. The memory links stamp their records (their triggers)."""
    rows = [Withholding(tombstone=tombstone, message_id=m) for m in sorted(plan.messages)]
    rows += [Withholding(tombstone=tombstone, turn_id=t) for t in sorted(plan.replies_of)]
    if rows:
        Withholding.objects.bulk_create(rows, ignore_conflicts=True)
    withhold_memory_links(tombstone, plan.memories)
    return len(plan.messages)


def withhold_memory_links(tombstone: Tombstone, memory_ids: Iterable[str]) -> None:
    """Link `tombstone` to the memory records `memory_ids` (F7.2): what a forget writes, and
    what an import restores."""
    rows = [MemoryWithholding(tombstone=tombstone, memory_id=m) for m in sorted(memory_ids)]
    if rows:
        MemoryWithholding.objects.bulk_create(rows, ignore_conflicts=True)


def release_memories(*, user, memory_ids: Iterable[str], evidence_time: datetime) -> int:
    """F7.2: the user's new evidence for records after a forget (their confirm or correct, or
    a message that teaches one again) releases each from the tombstones forgotten before that
    evidence. Answers how many links were deleted (each stamps its record)."""
    ids = [str(m) for m in memory_ids]
    if not ids:
        return 0
    deleted, _ = MemoryWithholding.objects.filter(
        tombstone__user=user, memory_id__in=ids, tombstone__forgotten_at__lt=evidence_time
    ).delete()
    return deleted


def withhold_links(
    tombstone: Tombstone, message_ids: Iterable[str], reply_turn_ids: Iterable[str] = ()
) -> None:
    """Restore links as an import carries them (§9)."""
    withhold(tombstone, WithheldPlan(frozenset(message_ids), frozenset(reply_turn_ids)))


# ---------------------------------------------------------------------------------------------
# Reads


def withheld_q(prefix: str = "") -> Q:
    """A filter on messages (through `prefix`, e.g. "message__") that keeps the withheld."""
    return Q(**{f"{prefix}withholdings__isnull": False}) | Q(
        **{f"{prefix}reply_to__reply_withholdings__isnull": False}
    )


def withheld_exists(outer: str = "pk") -> Exists:
    """An expression true for a withheld message (`outer` names its id in the outer query)."""
    return Exists(
        Withholding.objects.filter(
            Q(message_id=OuterRef(outer)) | Q(turn__reply_message_id=OuterRef(outer))
        )
    )


def withheld_message_ids(*, user, message_ids: Iterable[str]) -> set[str]:
    """The ids among `message_ids` (of `user`) that some tombstone withholds now."""
    ids = [str(m) for m in message_ids]
    if not ids:
        return set()
    direct = Withholding.objects.filter(tombstone__user=user, message_id__in=ids).values_list(
        "message_id", flat=True
    )
    replies = Withholding.objects.filter(
        tombstone__user=user, turn__reply_message_id__in=ids
    ).values_list("turn__reply_message_id", flat=True)
    return {str(m) for m in direct} | {str(m) for m in replies}


def withheld_by(*, user, message_ids: Iterable[str]) -> dict[str, list[Tombstone]]:
    """For each withheld message among `message_ids`, the tombstones withholding it (oldest
    forget first): the transcript's notice names the forget, never the value."""
    ids = [str(m) for m in message_ids]
    found: dict[str, list[Tombstone]] = {}
    if not ids:
        return found
    rows = (
        Withholding.objects.filter(tombstone__user=user)
        .filter(Q(message_id__in=ids) | Q(turn__reply_message_id__in=ids))
        .select_related("tombstone", "turn")
        .order_by("tombstone__forgotten_at", "tombstone_id")
    )
    for row in rows:
        mid = str(row.message_id) if row.message_id else str(row.turn.reply_message_id)
        kept = found.setdefault(mid, [])
        if row.tombstone not in kept:
            kept.append(row.tombstone)
    return found


def withheld_count_annotation() -> Count:
    """Annotates tombstones with how many messages each withholds now (its message links and
    the committed replies its holds name), for a list in one query."""
    return Count(
        "withholdings",
        filter=Q(withholdings__message__isnull=False)
        | Q(withholdings__turn__reply_message__isnull=False),
    )


def withheld_counts(tombstone_ids: Iterable) -> dict[str, int]:
    """How many messages each tombstone withholds now: its message links and the committed
    replies its holds name (F6: counting messages another tombstone also withholds)."""
    return _counted_by_tombstone(
        Withholding.objects.filter(Q(message__isnull=False) | Q(turn__reply_message__isnull=False)),
        tombstone_ids,
    )


def _counted_by_tombstone(links, tombstone_ids: Iterable) -> dict[str, int]:
    """How many of `links` (a queryset of link rows) each of the tombstones has, 0 for none,
    in one query."""
    ids = list(tombstone_ids)
    counts = {str(t): 0 for t in ids}
    if not ids:
        return counts
    for tid, n in (
        links.filter(tombstone_id__in=ids)
        .values_list("tombstone_id")
        .annotate(n=Count("id"))
        .order_by()
    ):
        counts[str(tid)] = n
    return counts


def withheld_distinct(tombstone_ids: Iterable) -> int:
    """How many distinct messages the tombstones withhold between them."""
    ids = list(tombstone_ids)
    if not ids:
        return 0
    direct = set(
        Withholding.objects.filter(tombstone_id__in=ids, message__isnull=False).values_list(
            "message_id", flat=True
        )
    )
    replies = set(
        Withholding.objects.filter(
            tombstone_id__in=ids, turn__reply_message__isnull=False
        ).values_list("turn__reply_message_id", flat=True)
    )
    return len(direct | replies)


def released_by(tombstone: Tombstone) -> list[str]:
    """The messages that deleting `tombstone` (F4) gives back: those it withholds that no other
    tombstone withholds, sorted."""
    lists = withheld_lists(tombstone.user)
    mine = set(lists.get(str(tombstone.pk), ([], []))[0])
    others = {
        m for tid, (messages, _) in lists.items() if tid != str(tombstone.pk) for m in messages
    }
    return sorted(mine - others)


def withheld_lists(user) -> dict[str, tuple[list[str], list[str]]]:
    """Per tombstone of `user`: the ids of the messages it withholds and of the turns whose
    reply it holds while none is committed — what an export carries (§9)."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    rows = Withholding.objects.filter(tombstone__user=user).values_list(
        "tombstone_id", "message_id", "turn_id", "turn__reply_message_id"
    )
    for tid, message, turn, reply in rows:
        messages, turns = found.setdefault(str(tid), ([], []))
        if message is not None:
            messages.append(str(message))
        elif reply is not None:
            messages.append(str(reply))
        else:
            turns.append(str(turn))
    for messages, turns in found.values():
        messages.sort()
        turns.sort()
    return found


def memories_withheld_by(*, user, memory_ids: Iterable[str]) -> dict[str, list[Tombstone]]:
    """F7.2: for each withheld record among `memory_ids` (of `user`), the tombstones withholding
    it now, oldest forget first (the pages' notice names the forget by the forgotten memory's
    label, never its value)."""
    ids = [str(m) for m in memory_ids]
    found: dict[str, list[Tombstone]] = {}
    if not ids:
        return found
    rows = (
        MemoryWithholding.objects.filter(tombstone__user=user, memory_id__in=ids)
        .select_related("tombstone")
        .order_by("tombstone__forgotten_at", "tombstone_id")
    )
    for row in rows:
        found.setdefault(str(row.memory_id), []).append(row.tombstone)
    return found


def withheld_memory_count_annotation() -> Coalesce:
    """Annotates tombstones with how many memory records each withholds now (F7.2), as a
    subquery (so it does not multiply the rows another count joins)."""
    counted = (
        MemoryWithholding.objects.filter(tombstone=OuterRef("pk"))
        .order_by()
        .values("tombstone")
        .annotate(n=Count("id"))
        .values("n")
    )
    return Coalesce(Subquery(counted), 0)


def withheld_memory_counts(tombstone_ids: Iterable) -> dict[str, int]:
    """F7.2: how many memory records each tombstone withholds now."""
    return _counted_by_tombstone(MemoryWithholding.objects.all(), tombstone_ids)


def withheld_memory_lists(user) -> dict[str, list[str]]:
    """F7.2: per tombstone of `user` that withholds any, the sorted ids of the memory records
    it withholds — what an export carries (§9)."""
    found: dict[str, list[str]] = {}
    rows = MemoryWithholding.objects.filter(tombstone__user=user).values_list(
        "tombstone_id", "memory_id"
    )
    for tid, memory in rows:
        found.setdefault(str(tid), []).append(str(memory))
    for memories in found.values():
        memories.sort()
    return found


def memories_released_by(tombstone: Tombstone) -> list[str]:
    """F4 + F7.2: the memory records that deleting `tombstone` gives back (those no other
    tombstone withholds), sorted."""
    mine = MemoryWithholding.objects.filter(tombstone=tombstone)
    others = MemoryWithholding.objects.filter(
        memory_id=OuterRef("memory_id"), tombstone__user_id=tombstone.user_id
    ).exclude(tombstone=tombstone)
    return sorted(str(m) for m in mine.filter(~Exists(others)).values_list("memory_id", flat=True))


def records_mentioning(records: Iterable, values: Iterable[str], *, excluding: Iterable[str] = ()):
    """Among `records` (the user's remembered ones), those whose values mention one of
    `values` as whole words, other than `excluding`: the forget page offers to forget them too
    (F6; they are not withheld by the forget). Ordered by key, then id."""
    match = matcher(values)
    skip = {str(i) for i in excluding}
    found = [r for r in records if str(r.id) not in skip and r.value and match(r.value)]
    return sorted(found, key=lambda r: (r.key, str(r.id)))
