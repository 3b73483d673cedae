"""Reads of the turn orchestration: a plan's history (sizes first, text only for what the
budget can admit), the transcript page with what each message produced, and the counts of
"Your data". Every query filters by user first (SPEC §0)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# ---------------------------------------------------------------------------------------------
# History for the planner: sizes first, content only for what the budget admits.
from django.db.models import Func, IntegerField

from config.builders import build_slotted, gc_paused
from config.storage import raw_reader
from conversations.models import Conversation, Message, Turn
from memory.models import MemoryRecord, MemorySource, Tombstone
from memory.selectors import remembered_now
from policy.models import PolicyRule

from .planner import HistoryCandidate


class OctetLength(Func):
    """UTF-8 byte length of a text column (I3 estimates tokens from bytes)."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra)


def history_candidates(conversation, before_seq: int):
    """Every message strictly before the boundary (I1), as (id, seq, role, bytes): one query
    that reads no message text.

    A long conversation has thousands of candidates, so where the database allows it the
    query the ORM would compile (same WHERE, same ORDER BY) runs through the raw reader of
    `memory.selectors` and the candidates are built column by column; the values are exactly
    the ORM path's."""
    rows = (
        Message.objects.filter(user_id=conversation.user_id, conversation=conversation, seq__lt=before_seq)
        .annotate(n_bytes=OctetLength("content"))
        .values_list("id", "seq", "role", "n_bytes")
    )
    reader = raw_reader(rows.db)
    if reader is None:
        return [HistoryCandidate(str(i), seq, role, n or 0) for i, seq, role, n in rows]
    # The byte length as the ORM writes it for this database (`OctetLength`).
    size, _ = rows.query.get_compiler(using=rows.db).compile(rows.query.annotations["n_bytes"])
    sql = (
        f"SELECT {reader.column(Message, 'id')}, {reader.column(Message, 'seq')}, "
        f"{reader.column(Message, 'role')}, COALESCE({size}, 0) FROM {reader.table(Message)} "
        f"WHERE {reader.name(Message, 'user')} = %s AND {reader.name(Message, 'conversation')} = %s "
        f"AND {reader.name(Message, 'seq')} < %s ORDER BY {reader.order(Message)}"
    )
    with gc_paused():  # every row read is kept
        fetched = reader.fetch(sql, [conversation.user_id,
                                     reader.param(Message, "conversation", conversation.pk), before_seq])
        if not fetched:
            return []
        ids, seqs, roles, sizes = zip(*fetched, strict=True)
        return build_slotted(HistoryCandidate, {"id": ids, "seq": seqs, "role": roles,
                                                "n_bytes": sizes}, len(ids))


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
    rows = (
        Message.objects.filter(user_id=conversation.user_id, conversation=conversation, seq__lt=before_seq)
        .annotate(n_bytes=OctetLength("content"))
        .values_list("id", "seq", "role", "n_bytes")
    )
    reader = raw_reader(rows.db)
    held: dict[str, str] = {}
    if reader is None:
        candidates = history_candidates(conversation, before_seq)
    else:
        size, _ = rows.query.get_compiler(using=rows.db).compile(rows.query.annotations["n_bytes"])
        seq = reader.name(Message, "seq")
        tokens = f"(COALESCE({size}, 0) + 3) / 4 + 4"
        # The text is read row by row (a subquery by primary key) for the rows that want it,
        # so the rows the window functions order carry no text.
        table, pk = reader.table(Message), reader.name(Message, "id")
        sql = (
            f"SELECT {reader.column(Message, 'id')}, {seq}, {reader.name(Message, 'role')}, n_bytes, "
            f"CASE WHEN running <= %s OR newest <= %s THEN (SELECT body.{reader.name(Message, 'content')} "
            f"FROM {table} body WHERE body.{pk} = history.{pk}) END "
            f"FROM (SELECT {pk}, {reader.name(Message, 'conversation')}, {seq}, "
            f"{reader.name(Message, 'role')}, "
            f"COALESCE({size}, 0) AS n_bytes, "
            f"SUM({tokens}) OVER (ORDER BY {seq} DESC ROWS UNBOUNDED PRECEDING) AS running, "
            f"ROW_NUMBER() OVER (ORDER BY {seq} DESC) AS newest "
            f"FROM {reader.table(Message)} "
            f"WHERE {reader.name(Message, 'user')} = %s AND {reader.name(Message, 'conversation')} = %s "
            f"AND {seq} < %s) history ORDER BY {reader.order(Message)}"
        )
        with gc_paused():  # every row read is kept
            fetched = reader.fetch(sql, [room, n_recent, conversation.user_id,
                                         reader.param(Message, "conversation", conversation.pk),
                                         before_seq])
            if fetched:
                ids, seqs, roles, sizes, texts = zip(*fetched, strict=True)
                candidates = build_slotted(HistoryCandidate, {"id": ids, "seq": seqs, "role": roles,
                                                              "n_bytes": sizes}, len(ids))
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

    rows = Message.objects.filter(user_id=conversation.user_id, conversation=conversation, pk__in=ids)
    reader = raw_reader(rows.db)
    if reader is None:
        return {str(i): content for i, content in rows.values_list("id", "content")}
    # The same query through the raw reader (ids as text from the database), in the same order.
    unique = list(dict.fromkeys(ids))
    sql = (
        f"SELECT {reader.column(Message, 'id')}, {reader.column(Message, 'content')} "
        f"FROM {reader.table(Message)} WHERE {reader.name(Message, 'user')} = %s "
        f"AND {reader.name(Message, 'conversation')} = %s "
        f"AND {reader.name(Message, 'id')} IN ({', '.join(['%s'] * len(unique))}) "
        f"ORDER BY {reader.order(Message)}"
    )
    params = [conversation.user_id, reader.param(Message, "conversation", conversation.pk),
              *(reader.param(Message, "id", i) for i in unique)]
    return dict(reader.fetch(sql, params))


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
    remembered: object  # memory.selectors.Remembered
    forgotten: dict[str, tuple[str, datetime]]


def transcript(user, conversation: Conversation) -> Transcript:
    """Queries: the messages, the provenance links, the turns' extraction outcomes, one bulk
    resolve of the user's memories, and the forgotten skeletons among what was produced."""
    from collections import defaultdict

    rows = list(
        Message.objects.filter(user=user, conversation=conversation).order_by("seq")
        .values_list("id", "seq", "role", "content", "created_at")
    )
    produced: dict[str, list[str]] = defaultdict(list)
    links = MemorySource.objects.filter(memory__user=user, message__conversation=conversation)
    for message_id, memory_id in links.values_list("message_id", "memory_id"):
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
    forgotten = {}
    if missing:
        forgotten = {
            str(i): (key, since)
            for i, key, since in MemoryRecord.objects.filter(user=user, pk__in=missing, status="forgotten")
            .values_list("id", "key", "status_since")
        }
    return Transcript(conversation, rows, dict(produced), dict(blocked), remembered, forgotten)


def data_counts(user) -> dict[str, int]:
    """How much of the user's data there is, for "Your data"."""
    return {
        "conversations": Conversation.objects.filter(user=user).count(),
        "messages": Message.objects.filter(user=user).count(),
        "memories": MemoryRecord.objects.filter(user=user).exclude(status="forgotten").count(),
        "forgotten": Tombstone.objects.filter(user=user).count(),
        "rules": PolicyRule.objects.filter(user=user, revoked_at__isnull=True).count(),
    }
