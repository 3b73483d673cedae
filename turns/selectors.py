"""Reads of the turn orchestration: a plan's history (sizes first, text only for what the
budget can admit), the transcript page with what each message produced, and the counts of
"Your data". Every query filters by user first (SPEC §0)."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import router
from django.db.models import F

# ---------------------------------------------------------------------------------------------
# History for the planner: sizes first, content only for what the budget admits.
from config.builders import build_slotted
from config.clock import db_now
from config.errors import NotFound
from config.storage import gc_paused, raw_reader
from conversations.models import Conversation, Message, Turn
from conversations.plan_snapshot import PlanSnapshot
from memory.selectors.pages import (
    forgotten_skeletons,
    memory_counts,
    memory_sources_of,
    records_named,
)
from memory.selectors.records import last_named_key
from memory.selectors.resolution import remembered_now
from memory.withholding import withheld_by, withheld_exists, withheld_message_ids
from policy.models import DecisionLog, PolicyRule
from policy.selectors import user_policy_version, user_rules_for_context

from . import used as used_words
from .planner import HistoryCandidate
from .storage import (
    OctetLength,
    TurnQuery,
    TurnRows,
    history_sql,
    message_size_sql,
    read_message_contents,
)
from .tokens import estimate_from_bytes


def history_candidates(conversation, before_seq: int):
    """Every message strictly before the boundary (I1), as (id, seq, role, bytes, withheld):
    no message text is read. `withheld` is F6's mark (a forget withholds it). The plan's
    history read (`history_with_contents`) with no room for text: one statement for both."""
    candidates, _ = history_with_contents(conversation, before_seq, room=0)
    return candidates


def _history_candidates_orm(conversation, before_seq: int):
    """`history_candidates` as the ORM reads it, where the raw reader does not serve the
    database (and the reference the raw read is tested against)."""
    rows = (
        Message.objects.filter(
            user_id=conversation.user_id, conversation=conversation, seq__lt=before_seq
        )
        .annotate(n_bytes=OctetLength("content"), held=withheld_exists())
        .values_list("id", "seq", "role", "n_bytes", "held")
    )
    return [
        HistoryCandidate(str(i), seq, role, n or 0, bool(held)) for i, seq, role, n, held in rows
    ]


def history_with_contents(conversation, before_seq: int, room: int, n_recent: int = 0):
    """The plan's history read (I1, I3) in one query: every message strictly before the
    boundary as `history_candidates` gives them, and the text of the newest messages whose
    estimates (I3: ceil(bytes / 4) + 4 each) add up to at most `room` tokens — a superset of
    what a `contiguous` history admits once the memory section is placed, whatever its size —
    and of the `n_recent` newest (the relevance query's, I6).

    Returns `(candidates, fetch_content)`: `fetch_content(ids)` answers from the text read and
    reads only ids it does not hold (one more query; under `skip` a message admitted past one
    that did not fit). The text read is bounded by `room`, never the conversation's length.
    Where the raw reader does not serve the database, the two reads of `history_candidates`
    and `message_contents`."""
    reader = raw_reader(router.db_for_read(Message))
    held: dict[str, str] = {}
    if reader is None:
        candidates = _history_candidates_orm(conversation, before_seq)
    else:
        # The turn's read's history statement, built once per process and database.
        sql = reader.sql("history", lambda r: history_sql(r, message_size_sql(r.alias)))
        sql += f" ORDER BY {reader.order(Message, 'history.')}"
        with gc_paused():  # every row read is kept
            fetched = reader.fetch(
                sql,
                [
                    room,
                    n_recent,
                    conversation.user_id,
                    reader.param(Message, "conversation", conversation.pk),
                    before_seq,
                ],
            )
            if fetched:
                ids, seqs, roles, sizes, texts, held = zip(*fetched, strict=True)
                candidates = build_slotted(
                    HistoryCandidate,
                    {
                        "id": ids,
                        "seq": seqs,
                        "role": roles,
                        "n_bytes": sizes,
                        "withheld": [bool(h) for h in held],
                    },
                    len(ids),
                )
                held = {i: text for i, text in zip(ids, texts, strict=True) if text is not None}
            else:
                candidates = []

    def fetch_content(ids: list[str]) -> dict[str, str]:
        missing = [i for i in ids if i not in held]
        if missing:
            held.update(message_contents(conversation, missing))
        return {i: held[i] for i in ids}

    return candidates, fetch_content


def message_contents(conversation, ids: list[str]) -> dict[str, str]:
    if not ids:
        return {}

    rows = Message.objects.filter(
        user_id=conversation.user_id, conversation=conversation, pk__in=ids
    )
    reader = raw_reader(rows.db)
    if reader is None:
        return {str(i): content for i, content in rows.values_list("id", "content")}
    # The same query through the raw reader (ids as text from the database), in the same order.
    return read_message_contents(reader, conversation, list(dict.fromkeys(ids)))


@dataclass(frozen=True)
class Transcript:
    """A conversation's messages in `seq` order and what each one produced: the ids of the
    memories it is a source of or that its turn's extraction wrote, how many extracted facts a
    tombstone blocked, what is remembered now, and the forgotten skeletons among the produced
    (id → key and forget time)."""

    conversation: Conversation
    messages: list[tuple]  # (id, seq, role, content, created_at)
    produced: dict[str, list[str]]
    blocked: dict[str, int]
    remembered: object  # memory.selectors.resolution.Remembered
    forgotten: dict[str, tuple[str, datetime]]
    # F6: each withheld message's forgets, oldest first, as (key, forgotten_at, forgotten_by):
    # never a value.
    withheld: dict[str, list[tuple[str, datetime, str]]] = dataclasses.field(default_factory=dict)


def transcript(user, conversation: Conversation) -> Transcript:
    """Queries: the messages, the provenance links, the turns' extraction outcomes, one bulk
    resolve of the user's memories, the forgotten skeletons among what was produced, and the
    forgets that withhold messages of the conversation (F6)."""
    from collections import defaultdict

    rows = list(
        Message.objects.filter(user=user, conversation=conversation)
        .order_by("seq")
        .values_list("id", "seq", "role", "content", "created_at")
    )
    produced: dict[str, list[str]] = defaultdict(list)
    for message_id, memory_id in memory_sources_of(user, conversation):
        produced[str(message_id)].append(str(memory_id))
    blocked: dict[str, int] = defaultdict(int)

    turns = Turn.objects.filter(user=user, conversation=conversation)
    for message_id, extracted in turns.values_list("user_message_id", "extracted"):
        for item in extracted or []:
            if item.get("memory"):
                produced[str(message_id)].append(str(item["memory"]))
            elif item.get("outcome") == "blocked":
                blocked[str(message_id)] += 1
    remembered = remembered_now(user)
    wanted = {i for ids in produced.values() for i in ids}
    missing = sorted(wanted - set(remembered.by_id))
    forgotten = forgotten_skeletons(user, missing) if missing else {}
    withheld = {
        message_id: [(t.key, t.forgotten_at, t.forgotten_by) for t in tombstones]
        for message_id, tombstones in withheld_by(
            user=user, message_ids=[r[0] for r in rows]
        ).items()
    }
    return Transcript(
        conversation, rows, dict(produced), dict(blocked), remembered, forgotten, withheld
    )


def data_counts(user) -> dict[str, int]:
    """How much of the user's data there is, for "Your data"."""
    return {
        "conversations": Conversation.objects.filter(user=user).count(),
        "messages": Message.objects.filter(user=user).count(),
        **memory_counts(user),
        "rules": PolicyRule.objects.filter(user=user, revoked_at__isnull=True).count(),
    }


def read_turn_orm(asked: TurnQuery) -> TurnRows:
    """What `turns.storage.read_turn` reads, through the ORM: the reference the raw statement
    is tested against, and the read wherever the raw reader does not serve the database."""
    conversation, capabilities = asked.conversation, asked.capabilities
    user = conversation.user
    existing = None
    if asked.turn_key is not None:
        existing = (
            Turn.objects.filter(conversation=conversation, turn_key=asked.turn_key)
            .values_list("pk", flat=True)
            .first()
        )
    asked.memory.read_orm()
    history, texts = [], {}
    if asked.planned:
        history = history_candidates(conversation, asked.boundary)
        running, wanted = 0, []
        admissible = [c for c in history if not c.withheld]  # F6
        for newest, candidate in enumerate(reversed(admissible), start=1):
            running += estimate_from_bytes(candidate.n_bytes)
            if running <= asked.room or newest <= asked.n_recent:
                wanted.append(candidate.id)
        texts = message_contents(conversation, wanted)
    rules = []
    if capabilities:
        rules = [
            ((r.capability_id, r.created_at, r.pk), r.to_domain())
            for r in user_rules_for_context(
                user=user,
                capabilities=capabilities,
                character_id=conversation.character_id,
                conversation_id=conversation.pk,
            )
        ]
    return TurnRows(
        now=db_now(),
        existing_turn=existing,
        last_named=last_named_key(user) if asked.learning else None,
        history=history,
        texts=texts,
        rules=rules,
        user_policy_version=user_policy_version(user) if capabilities else 0,
    )


@dataclass(frozen=True)
class RepliesUsed:
    """What each reply of a conversation was planned with (SPEC E2): the stored plan snapshot
    by reply message id, the records those snapshots name as they are stored now (id → key,
    value, forgotten time or None; a forgotten record has no value left), the decisions
    an older snapshot names only by id (id → capability, effect), and the user messages
    whose turn learned nothing because `learn` was off (I8)."""

    snapshots: dict[str, PlanSnapshot | None]
    # id → (key, value, forgotten time or None, scope id, version, the id it supersedes)
    held: dict[str, tuple[str, str, datetime | None, str, int, str | None]]
    logged: dict[str, tuple[str, str]]
    not_learned: frozenset[str]


def replies_used(user, conversation: Conversation) -> RepliesUsed:
    """Three queries whatever the conversation's length: its turns, the memory records their
    snapshots name, and (only for snapshots stored before decisions were kept in them) the
    decision log rows they name."""
    snapshots: dict[str, PlanSnapshot | None] = {}
    not_learned = set()
    memory_ids, decision_ids = [], []
    for user_message, reply, learning, snapshot in Turn.objects.filter(
        user=user, conversation=conversation
    ).values_list("user_message_id", "reply_message_id", "learning", "plan_snapshot"):
        if not learning:
            not_learned.add(str(user_message))
        if reply is None:
            continue
        snapshot = PlanSnapshot.of(snapshot)
        snapshots[str(reply)] = snapshot
        memory_ids += used_words.memory_ids(snapshot)
        decision_ids += used_words.decision_ids(snapshot)
    held: dict[str, tuple[str, str, datetime | None, str, int, str | None]] = {}
    wanted = _uuids(memory_ids)
    if wanted:
        for pk, key, value, status, since, scope_id, version, supersedes in records_named(
            user, wanted
        ):
            forgotten = status == "forgotten"
            held[str(pk)] = (
                key,
                "" if forgotten else value,
                (since or db_now()) if forgotten else None,
                scope_id,
                version,
                str(supersedes) if supersedes else None,
            )
    logged: dict[str, tuple[str, str]] = {}
    wanted = _uuids(decision_ids)
    if wanted:
        logged = {
            str(pk): (capability, effect)
            for pk, capability, effect in DecisionLog.objects.filter(
                user=user, pk__in=wanted
            ).values_list("id", "capability", "effect")
        }
    return RepliesUsed(snapshots, held, logged, frozenset(not_learned))


def _uuids(values) -> list[uuid.UUID]:
    out = []
    for value in dict.fromkeys(values):
        try:
            out.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return out


# ---------------------------------------------------------------------------------------------
# What the runtime reads back (SPEC §10 C4)

MESSAGE_FIELDS = ("id", "seq", "role", "content", "created_at")


def conversation_messages(
    conversation: Conversation, *, after_seq: int | None = None, before_seq: int | None = None
):
    """`GET /conversations/{id}/messages`: the conversation's messages oldest first (by `seq`),
    only those after `after_seq` and before `before_seq` when given, each with the turn it
    belongs to (the turn it opened or the turn it replied to; null for neither) — rows, not
    models, so a page is one query whatever the conversation's length (C4)."""
    qs = Message.objects.filter(user_id=conversation.user_id, conversation=conversation)
    if after_seq is not None:
        qs = qs.filter(seq__gt=after_seq)
    if before_seq is not None:
        qs = qs.filter(seq__lt=before_seq)
    return qs.order_by("seq").values(
        *MESSAGE_FIELDS, opened=F("turn__id"), replied=F("reply_to__id"), withheld=withheld_exists()
    )


def messages_shown(user, rows) -> list[dict]:
    """A page of message rows in the C4 message shape, each marked `withheld` (F6): read with
    the rows (`conversation_messages`), else by one call of
    `memory.withholding.withheld_message_ids` for the whole page. A withheld message's
    `content` is None (F7.5): the API's read-backs never carry a forgotten word (the user's
    own pages read the transcript, which keeps them)."""
    rows = list(rows)
    if rows and "withheld" in rows[0]:
        withheld = {str(r["id"]) for r in rows if r["withheld"]}
    else:
        withheld = withheld_message_ids(user=user, message_ids=[str(r["id"]) for r in rows])
    out = []
    for r in rows:
        turn = r["opened"] or r["replied"]
        held = str(r["id"]) in withheld
        shown = {name: r[name] for name in MESSAGE_FIELDS}
        if held:
            shown["content"] = None  # F7.5: a read-back never carries withheld words
        out.append({**shown, "turn": turn, "withheld": held})
    return out


def turn_get(turn_id) -> Turn:
    """`GET /turns/{id}`: the turn with its conversation's user, its user message and its
    reply (one query), or a 404 (C4). Its extracted memories are read as they are now by
    `turns.serializers.turn_json`."""
    turn = (
        Turn.objects.select_related("conversation__user", "user_message", "reply_message")
        .annotate(reply_withheld=withheld_exists("reply_message_id"))
        .filter(pk=turn_id)
        .first()
    )
    if turn is None:
        raise NotFound("No such turn.")
    return turn


def turn_reply_shown(turn: Turn) -> dict | None:
    """The turn's committed reply in the C4 message shape (with `turn` and `withheld`), or
    None while the turn is open."""
    reply = turn.reply_message
    if reply is None:
        return None
    row = {name: getattr(reply, name) for name in MESSAGE_FIELDS}
    withheld = getattr(turn, "reply_withheld", None)
    if withheld is not None:
        row["withheld"] = withheld
    return messages_shown(turn.conversation.user, [{**row, "opened": None, "replied": turn.pk}])[0]
