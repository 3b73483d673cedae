"""Reads shared by the API, the pages and the services. Every query filters by user first
(SPEC §0: the privacy boundary and the sharding key)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model

from config import catalog
from config.clock import db_now
from config.errors import NotFound, ValidationError
from memory.domain import Context

from .models import Character, Conversation, Message

User = get_user_model()


@dataclass(frozen=True)
class LoadedContext:
    """A validated context (SPEC §0) with its rows, and the pure-core view of it."""

    user: User
    character: Character | None
    conversation: Conversation | None
    scene: str | None
    now: datetime
    now_given: bool

    @property
    def domain(self) -> Context:
        return Context(
            user=self.user.username,
            character=self.character.slug if self.character else None,
            conversation=str(self.conversation.pk) if self.conversation else None,
            scene=self.scene,
            now=self.now,
        )


def user_by_ref(ref: str, *, field: str | None = "user") -> User:
    """The user a ref names. In a body an unknown user is a validation error naming the field;
    in a path (`field=None`) it is a 404."""
    # A ref no user could have (PostgreSQL cannot even compare a NUL) is simply unknown.
    plausible = isinstance(ref, str) and 0 < len(ref) <= 150 and "\x00" not in ref
    # The memory profile comes along (one join): it holds the user's memory switches (I8),
    # which resolve and extraction read.
    user = User.objects.select_related("memory_profile").filter(username=ref).first() if plausible else None
    if user is None:
        if field is None:
            raise NotFound(f"No user {ref!r}.")
        raise ValidationError(f"Unknown user {ref!r}.", field=field)
    return user


@catalog.cached
def catalog_characters() -> dict[str, Character]:
    """Every character by slug, cached per process while the catalog version holds
    (config.catalog). The instances are shared: read them, never change them."""
    return {c.slug: c for c in Character.objects.all()}


def character_by_slug(slug: str, *, field: str = "character") -> Character:
    """A character by slug: from the process cache in a request (no query when warm), else
    one query."""
    if catalog.active():
        character = catalog_characters().get(slug) if isinstance(slug, str) else None
    else:
        character = Character.objects.filter(slug=slug).first()
    if character is None:
        raise ValidationError(f"Unknown character {slug!r}.", field=field)
    return character


def conversation_of_user(user, conversation_id, *, field: str = "conversation") -> Conversation:
    """W1: a conversation that does not exist, or belongs to another user, is invalid."""
    try:
        conversation_id = uuid.UUID(str(conversation_id))
    except ValueError:
        raise ValidationError("Must be a UUID.", field=field) from None
    conversation = (
        Conversation.objects.select_related("character").filter(user=user, pk=conversation_id).first()
    )
    if conversation is None:
        raise ValidationError("Unknown conversation for this user.", field=field)
    return conversation


def _conversation_with_user(ref, conversation_id) -> Conversation | None:
    """The user's conversation with its user, the user's memory profile and its character (one
    query), or None — also when the ref or the id could name nothing."""
    if not conversation_id or not isinstance(ref, str) or not 0 < len(ref) <= 150 or "\x00" in ref:
        return None
    try:
        conversation_id = uuid.UUID(str(conversation_id))
    except ValueError:
        return None
    return (
        Conversation.objects.select_related("user__memory_profile", "character")
        .filter(user__username=ref, pk=conversation_id).first()
    )


def load_context(data: dict, *, prefix: str = "context") -> LoadedContext:
    """Validate a context dict (already type-checked by `ContextInput`) against the database:
    the user exists; the character exists; the conversation belongs to the user and, when a
    character is named, to that character; a scene needs a conversation. Without `now` the
    database clock is read once (SPEC §0).

    With a conversation, the conversation is read with its user (and memory profile) and its
    character in one query; only when that finds nothing are the user and the conversation
    read one by one, to say which of them is unknown."""
    conversation = _conversation_with_user(data["user"], data.get("conversation"))
    if conversation is not None:
        user = conversation.user
    else:
        user = user_by_ref(data["user"], field=f"{prefix}.user")
        if data.get("conversation"):
            conversation = conversation_of_user(user, data["conversation"], field=f"{prefix}.conversation")
    character = None
    if data.get("character"):
        if conversation is not None and conversation.character.slug == data["character"]:
            character = conversation.character
        else:
            character = character_by_slug(data["character"], field=f"{prefix}.character")
    if conversation is not None:
        if character is None:
            character = conversation.character
        elif conversation.character_id != character.pk:
            raise ValidationError(
                "The conversation is with another character.", field=f"{prefix}.conversation"
            )
    scene = data.get("scene") or None
    if scene is not None and conversation is None:
        raise ValidationError("A scene needs a conversation.", field=f"{prefix}.scene")
    now = data.get("now")
    return LoadedContext(
        user=user, character=character, conversation=conversation, scene=scene,
        now=now if now is not None else db_now(), now_given=now is not None,
    )


def messages_of_user(user, ids) -> list[Message]:
    return list(Message.objects.filter(user=user, pk__in=list(ids)))


# ---------------------------------------------------------------------------------------------
# History for the planner: sizes first, content only for what the budget admits.

from django.db.models import Func, IntegerField  # noqa: E402


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
    from memory.builders import build_slotted, gc_paused
    from memory.selectors import raw_reader

    from .planner import HistoryCandidate

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
    from memory.builders import build_slotted, gc_paused
    from memory.selectors import raw_reader

    from .planner import HistoryCandidate

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
    from memory.selectors import raw_reader

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


# ---------------------------------------------------------------------------------------------
# What the conversation and data pages read


def conversation_for_page(user, conversation_id) -> Conversation:
    """One of the user's conversations, with its character; another user's is a 404."""
    conversation = Conversation.objects.select_related("character").filter(user=user, pk=conversation_id).first()
    if conversation is None:
        raise NotFound("No such conversation.")
    return conversation


def conversations_of(user):
    """The user's conversations, newest first, each with its number of messages."""
    from django.db.models import Count

    return (
        Conversation.objects.filter(user=user).select_related("character")
        .annotate(n_messages=Count("messages")).order_by("-created_at", "id")
    )


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

    from memory.models import MemoryRecord, MemorySource
    from memory.selectors import remembered_now

    rows = list(
        Message.objects.filter(user=user, conversation=conversation).order_by("seq")
        .values_list("id", "seq", "role", "content", "created_at")
    )
    produced: dict[str, list[str]] = defaultdict(list)
    links = MemorySource.objects.filter(memory__user=user, message__conversation=conversation)
    for message_id, memory_id in links.values_list("message_id", "memory_id"):
        produced[str(message_id)].append(str(memory_id))
    blocked: dict[str, int] = defaultdict(int)
    from .models import Turn

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
    from memory.models import MemoryRecord, Tombstone
    from policy.models import PolicyRule

    return {
        "conversations": Conversation.objects.filter(user=user).count(),
        "messages": Message.objects.filter(user=user).count(),
        "memories": MemoryRecord.objects.filter(user=user).exclude(status="forgotten").count(),
        "forgotten": Tombstone.objects.filter(user=user).count(),
        "rules": PolicyRule.objects.filter(user=user, revoked_at__isnull=True).count(),
    }
