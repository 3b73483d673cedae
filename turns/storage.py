"""The turn's statements for the speed devices of `config.storage` (docs/DESIGN.md, habit 2).

A new turn is read in one statement after the locks (`read_turn`): the clock, the turn stored
under the key, the user's most recently named thing (the extractor's "it", SPEC §8), the
context's whole memory state (`memory.state.ContextMemory`), the history before the
message with the text of the messages a plan could admit (I1, I3, I6), and the user's rules
for the capabilities asked about with the user's policy version (D1, D7). Each part is a
scalar subquery; the variable ones answer a JSON array, so the statement is one row whatever
the data. The history part is the plan read's statement (`history_sql`), shared with the
`GET` plan's read."""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connections
from django.db.models import Func, IntegerField
from django.db.models.query import get_related_populators
from django.utils import timezone

from config.storage import RawReader, json_rows, parse_datetimes
from conversations.models import Conversation, Message, Turn
from memory.state import ContextMemory, last_named_part, on_forget, registry_part
from memory.withholding_storage import withheld_ids_sql, withheld_sql
from policy.domain import PolicyScope, Rule
from policy.models import PolicyRule, UserPolicyVersion

from . import relevance
from .held_history import HeldHistories, HeldHistory, candidates, keep_history
from .history_order import InOrder
from .planner import HistoryCandidate

# The history each conversation's last turn in this process read (`turns.held_history`).
HELD_HISTORIES = HeldHistories(512)
# The terms of memories' labels and keys the process's plans ranked (I6; F7.6: by record id).
LABEL_TERMS = relevance.LabelTerms()


def _forgotten(user_id) -> None:
    """F7.6: the process learnt of a forget or an undo of the user: the texts it holds of
    their conversations' histories and the relevance terms of labels and keys let go."""
    HELD_HISTORIES.forget_texts(user_id)
    LABEL_TERMS.clear()


on_forget(_forgotten)


class OctetLength(Func):
    """UTF-8 byte length of a text column (I3 estimates tokens from bytes)."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(
            compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra
        )


def history_sql(reader: RawReader, size: str, *, since: bool = False) -> str:
    """Every message of a conversation before a boundary (parameters: room tokens, n newest,
    user id, conversation id, boundary seq; with `since`, then a seq the messages come after)
    as (id, seq, role, bytes, text or NULL, withheld):
    the text of the newest messages whose I3 estimates (ceil(bytes / 4) + 4 each) add up to at
    most the room, and of the `n` newest. A withheld message (F6) is listed without its text,
    and neither the room nor the `n` newest count it: both history policies and I6's query go
    on past it. `size` is the byte length of the content as the ORM writes it for this
    database. The text is read row by row (a subquery by primary key) for the rows that want
    it, so the rows the window functions order carry no text."""
    seq, table, pk = reader.name(Message, "seq"), reader.table(Message), reader.name(Message, "id")
    conversation, role = reader.name(Message, "conversation"), reader.name(Message, "role")
    tokens = "(n_bytes + 3) / 4 + 4"
    return (
        f"SELECT {reader.column(Message, 'id')} AS hid, {seq} AS hseq, "
        f"{role} AS hrole, n_bytes AS hbytes, "
        f"CASE WHEN held = 0 AND (running <= %s OR newest <= %s) THEN (SELECT body."
        f"{reader.name(Message, 'content')} FROM {table} body WHERE body.{pk} = history.{pk}) "
        f"END AS htext, held AS hheld "
        f"FROM (SELECT {pk}, {conversation}, {seq}, {role}, n_bytes, held, "
        f"SUM(CASE WHEN held = 1 THEN 0 ELSE {tokens} END) "
        f"OVER (ORDER BY {seq} DESC ROWS UNBOUNDED PRECEDING) AS running, "
        f"SUM(1 - held) OVER (ORDER BY {seq} DESC ROWS UNBOUNDED PRECEDING) AS newest "
        f"FROM (SELECT {pk}, {conversation}, {seq}, {role}, COALESCE({size}, 0) AS n_bytes, "
        f"{withheld_sql(reader, f'{table}.{pk}')} AS held FROM {table} "
        f"WHERE {reader.name(Message, 'user')} = %s "
        f"AND {conversation} = %s AND {seq} < %s{f' AND {seq} > %s' if since else ''}) sized) "
        "history"
    )


@dataclass
class TurnRows:
    """What `read_turn` read, as the pure turn pipeline takes it."""

    now: datetime
    existing_turn: uuid.UUID | None
    last_named: str | None
    history: list[HistoryCandidate]
    texts: dict[str, str]
    rules: list[tuple[tuple, Rule]]  # the user's, each with its place in the model's order
    user_policy_version: int
    registry_rows: list[tuple] | None = None  # (key, cardinality, label, pinned), when read


@dataclass(frozen=True)
class TurnQuery:
    """What a turn's read asks for (`read_turn`, and its ORM reference
    `turns.selectors.read_turn_orm`): the turn under `turn_key` (None: none looked up), the
    character's and the context's memory (`memory`, written and read back by itself), the
    history before the message of seq `boundary` (I1) with the text of what `room` tokens
    and the `n_recent` newest messages admit, the "it" of §8 when `learning`, and the rules
    of the asked `capabilities`."""

    conversation: Conversation
    turn_key: str | None
    character: str
    memory: ContextMemory
    room: int
    n_recent: int
    learning: bool
    capabilities: list[str]
    boundary: int

    @property
    def planned(self) -> bool:
        """Whether a plan is to be made: then the history is read (`room` < 0 and no
        `n_recent` read none)."""
        return self.room >= 0 or self.n_recent > 0


_RULE_FIELDS = (
    "id",
    "capability",
    "effect",
    "source",
    "scope_kind",
    "conversation",
    "scene",
    "requested_by",
    "valid_from",
    "valid_until",
    "revoked_at",
    "version",
    "created_at",
)


def read_turn(reader: RawReader, asked: TurnQuery, *, registry: bool = False) -> TurnRows:
    """One statement, run after the conversation's and the memory profile's locks so it sees
    every committed write (see the module docstring). `turn_key` None looks up no turn (a
    stored turn's plan); the history is the messages before `boundary` (the current
    message's seq, I1), read only for a plan (`TurnQuery.planned`); `registry` reads the
    key registry too (outside a request, where the catalog cache does not serve it).
    Memory's parts are `memory`'s to write and to read back (`memory.state.ContextMemory`):
    the context's state is read only when the user's memory version is not the one this
    process keeps it at."""
    vendor = connections[reader.alias].vendor
    column, name = reader.column, reader.name
    conversation = asked.conversation
    user = conversation.user
    parts: list[str] = []
    params: list = []
    if vendor == "postgresql":
        parts.append(
            "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00:00'"
        )
    if asked.turn_key is not None:
        parts.append(
            f"(SELECT {column(Turn, 'id')} FROM {reader.table(Turn)} "
            f"WHERE {name(Turn, 'conversation')} = %s AND {name(Turn, 'turn_key')} = %s)"
        )
        params += [reader.param(Turn, "conversation", conversation.pk), asked.turn_key]
    if asked.learning:
        named, found = last_named_part(reader, user.pk)
        parts.append(named)
        params += found
    planned = asked.planned
    # With learning off and no plan, the turn touches no memory table (I8).
    remembers = asked.learning or planned
    if remembers:
        memory_parts, found = asked.memory.read_parts(reader)
        parts += memory_parts
        params += found
    held = None
    if planned:
        held = _held(vendor, conversation, asked.boundary)
        history_parts, history_params = _history_parts(reader, vendor, held, asked)
        parts += history_parts
        params += history_params
    rule_parts, rule_params = _rule_parts(reader, vendor, conversation, asked.capabilities)
    parts += rule_parts
    params += rule_params
    if registry and remembers:
        parts.append(registry_part(reader))
    # Nothing to read (SQLite, a stored turn whose message alone overflows the budget): the
    # plan step refuses it (I3) from the message alone.
    row = list(reader.fetch("SELECT " + ", ".join(parts), params)[0]) if parts else []
    now = _turn_now(vendor, row)
    existing = row.pop(0) if asked.turn_key is not None else None
    last_named = row.pop(0) if asked.learning else None
    if remembers:
        asked.memory.read_from(row)
    history, texts = [], {}
    if planned:
        history, texts = _history_read(reader, vendor, row, held, asked)
    rules, policy_version = _read_rules(row, asked.capabilities, user.username, asked.character)
    keys = [tuple(found) for found in json.loads(row.pop(0))] if registry and remembers else None
    return TurnRows(
        now=now,
        existing_turn=uuid.UUID(str(existing)) if existing else None,
        last_named=last_named,
        history=history,
        texts=texts,
        rules=rules,
        user_policy_version=policy_version,
        registry_rows=keys,
    )


def _turn_now(vendor: str, row: list) -> datetime:
    """The turn's time: PostgreSQL's clock as the statement read it (the row's first column),
    else this process's."""
    if vendor == "postgresql":
        return datetime.fromisoformat(row.pop(0))
    return timezone.now().astimezone(UTC)


def _rule_parts(
    reader: RawReader, vendor: str, conversation: Conversation, capabilities: list[str]
) -> tuple[list[str], list]:
    """The turn's read's policy parts (SPEC §6) and their parameters: the user's rules of the
    asked capabilities whose scope can cover the conversation (D1 decides the rest), as one
    JSON column, and the user's policy version. Nothing when no capability is asked."""
    if not capabilities:
        return [], []
    column, name = reader.column, reader.name
    user = conversation.user
    rule_columns = [column(PolicyRule, field, "p.") for field in _RULE_FIELDS]
    scope = [f"p.{name(PolicyRule, 'scope_kind')} = 'global'"]
    scope.append(
        f"(p.{name(PolicyRule, 'scope_kind')} = 'character' "
        f"AND p.{name(PolicyRule, 'character')} = %s)"
    )
    scope.append(
        f"(p.{name(PolicyRule, 'scope_kind')} IN ('conversation', 'scene') "
        f"AND p.{name(PolicyRule, 'conversation')} = %s)"
    )
    parts = [
        json_rows(
            vendor,
            rule_columns,
            f"FROM {reader.table(PolicyRule)} p WHERE p.{name(PolicyRule, 'user')} = %s "
            f"AND p.{name(PolicyRule, 'capability')} IN "
            f"({', '.join(['%s'] * len(capabilities))}) "
            f"AND ({' OR '.join(scope)})",
        ),
        f"(SELECT {name(UserPolicyVersion, 'version')} "
        f"FROM {reader.table(UserPolicyVersion)} "
        f"WHERE {name(UserPolicyVersion, 'user')} = %s)",
    ]
    params = [user.pk, *capabilities, conversation.character_id]
    params.append(reader.param(PolicyRule, "conversation", conversation.pk))
    params.append(user.pk)
    return parts, params


def _read_rules(
    row: list, capabilities: list[str], username: str, character: str
) -> tuple[list[tuple[tuple, Rule]], int]:
    """The policy parts read back: the rules (each with its place in the model's order) and
    the user's policy version (0 before any change); nothing when no capability was asked."""
    if not capabilities:
        return [], 0
    rules = _parse_rules(json.loads(row.pop(0)), username, character)
    return rules, row.pop(0) or 0


def _history_part(reader: RawReader, vendor: str, *, since: bool = False) -> str:
    """`history_sql` as one JSON column of the turn's read, built once per database."""

    def build(r: RawReader) -> str:
        history = history_sql(r, message_size_sql(r.alias), since=since)
        return json_rows(
            vendor,
            ["h.hid", "h.hseq", "h.hrole", "h.hbytes", "h.htext", "h.hheld"],
            f"FROM ({history}) h",
        )

    return reader.sql("history-since-part" if since else "history-part", build)


def _history_params(reader: RawReader, asked: TurnQuery) -> list:
    """The parameters of the whole history's part (`_history_part`)."""
    conversation = asked.conversation
    conversation_param = reader.param(Message, "conversation", conversation.pk)
    return [asked.room, asked.n_recent, conversation.user.pk, conversation_param, asked.boundary]


def _held(vendor: str, conversation, boundary: int) -> HeldHistory | None:
    """The history this process holds for the conversation, where it may be caught up: on
    PostgreSQL (a row's version is its `xmin` and `ctid`), wholly before the boundary, and
    read when the conversation had lost as many messages as it has now (no message of it has
    been deleted since: `Conversation.messages_removed`)."""
    if vendor != "postgresql":
        return None
    held = HELD_HISTORIES.get(conversation.pk)
    if held is None or held.seq >= boundary or held.removed != conversation.messages_removed:
        return None
    return held


def _history_parts(reader: RawReader, vendor: str, held, asked: TurnQuery):
    """The turn's read's history parts and their parameters. On PostgreSQL, first the row
    version of the newest message before the boundary (what the process keeps it at); then
    the whole history, or, where the process holds some, the parts that catch it up: the
    version of the newest held, the conversation's withheld ids (F6) and the messages after
    the held seq."""
    conversation = asked.conversation
    user_id = conversation.user.pk
    conversation_param = reader.param(Message, "conversation", conversation.pk)
    whole = _history_params(reader, asked)
    if vendor != "postgresql":
        return [_history_part(reader, vendor)], whole
    newest, check = reader.sql("held-history-check", _held_check_sql)
    parts, params = [newest], [user_id, conversation_param, asked.boundary]
    if held is None:
        return [*parts, _history_part(reader, vendor)], [*params, *whole]
    by_conversation = [user_id, conversation_param]
    params += [*by_conversation, held.seq]
    params += [*by_conversation, *by_conversation, *whole, held.seq]
    return [*parts, *check, _history_part(reader, vendor, since=True)], params


def _held_check_sql(reader: RawReader) -> tuple[str, list[str]]:
    """The parts of `_history_parts` that check and flag a held history, built once: a
    message's row version, `id:xmin(ctid)` — a row written again has another, in its own
    transaction or in the writer's — of the newest before a seq; then the version at a seq
    and the withheld ids (parameters: user id, conversation id, a seq each; user id,
    conversation id twice for the ids). Nothing here counts the messages: the conversation's
    row says whether some were deleted (`_held`)."""
    message, seq = reader.table(Message), reader.name(Message, "seq")
    user, conversation = reader.name(Message, "user"), reader.name(Message, "conversation")
    where = f"FROM {message} WHERE {user} = %s AND {conversation} = %s AND {seq}"
    stamp = f"{reader.name(Message, 'id')}::text || ':' || xmin::text || ctid::text"
    newest = f"(SELECT {stamp} {where} < %s ORDER BY {seq} DESC LIMIT 1)"
    withheld = withheld_ids_sql(reader)
    return newest, [
        f"(SELECT {stamp} {where} = %s)",
        f"(SELECT COALESCE(json_agg(x.id), '[]')::text FROM ({withheld}) x(id))",
    ]


def _history_read(reader, vendor: str, row: list, held, asked: TurnQuery):
    """The history the statement read — on PostgreSQL caught up from what this process holds
    where it holds some (a held history the database no longer has is read whole, one
    statement more) — and, read up to the conversation's end, what the process keeps of it
    for the next turn."""
    if vendor != "postgresql":
        return _parse_history(json.loads(row.pop(0)))
    stamp = row.pop(0)  # the newest message before the boundary, as it is now
    if held is None:
        history, texts = _parse_history(json.loads(row.pop(0)))
    else:
        held_stamp, withheld, new = (row.pop(0) for _ in range(3))
        caught_up = held.holds(held_stamp)
        if caught_up:
            new_history, new_texts = _parse_history(json.loads(new))
            withheld = set(json.loads(withheld))
            history = InOrder(candidates(held.candidates, new_history, withheld))
            texts = {i: t for i, t in held.texts.items() if i not in withheld} | new_texts
        else:
            whole = _history_params(reader, asked)
            [[found]] = reader.fetch("SELECT " + _history_part(reader, vendor), whole)
            history, texts = _parse_history(json.loads(found))
        HELD_HISTORIES.note(caught_up=caught_up)
    conversation = asked.conversation
    if asked.boundary <= conversation.last_seq:
        return history, texts  # a stored turn's history: the next turn's is read after it
    HELD_HISTORIES.put(
        conversation.pk,
        keep_history(
            history,
            texts,
            stamp=stamp,
            room=asked.room,
            n_recent=asked.n_recent,
            removed=conversation.messages_removed,
        ),
        user=conversation.user.pk,
    )
    return history, texts


def _parse_history(rows: list) -> tuple[InOrder, dict[str, str]]:
    """The history rows as the planner takes them: one per message id, oldest first by the
    conversation's unique `seq` (`turns.history_order.InOrder`)."""
    rows.sort(key=lambda r: r[1])
    found = InOrder(HistoryCandidate(r[0], r[1], r[2], r[3], bool(r[5])) for r in rows)
    return found, {r[0]: r[4] for r in rows if r[4] is not None}


def _parse_rules(rows: list, username: str, character: str) -> list[tuple[tuple, Rule]]:
    """The user's rules as the domain rules `PolicyRule.to_domain` builds, each with its place
    in the model's order (capability, created_at, id); a character rule's character is the
    context's (the statement selected no other)."""
    found = []
    for (
        rid,
        capability,
        effect,
        source,
        kind,
        conversation,
        scene,
        requested_by,
        valid_from,
        valid_until,
        revoked_at,
        version,
        created_at,
    ) in rows:
        found.append(
            (
                (capability, _time(created_at), uuid.UUID(rid)),
                Rule(
                    id=rid,
                    user=username,
                    capability=capability,
                    effect=effect,
                    source=source,
                    scope=PolicyScope(
                        kind=kind,
                        character=character if kind == "character" else None,
                        conversation=conversation,
                        scene=scene,
                    ),
                    requested_by=requested_by,
                    valid_from=_time(valid_from),
                    valid_until=_time(valid_until),
                    revoked_at=_time(revoked_at),
                    version=version,
                ),
            )
        )
    return found


def _time(value: str | None) -> datetime | None:
    return None if value is None else parse_datetimes([value])[0]


def read_message_contents(reader: RawReader, conversation, ids: list[str]) -> dict[str, str]:
    """The text of the conversation's messages `ids` (distinct), by id as text, in the ORM's
    order of messages (`turns.selectors.message_contents`)."""
    sql = (
        f"SELECT {reader.column(Message, 'id')}, {reader.column(Message, 'content')} "
        f"FROM {reader.table(Message)} WHERE {reader.name(Message, 'user')} = %s "
        f"AND {reader.name(Message, 'conversation')} = %s "
        f"AND {reader.name(Message, 'id')} IN ({', '.join(['%s'] * len(ids))}) "
        f"ORDER BY {reader.order(Message)}"
    )
    params = [
        conversation.user_id,
        reader.param(Message, "conversation", conversation.pk),
        *(reader.param(Message, "id", i) for i in ids),
    ]
    return dict(reader.fetch(sql, params))


def message_size_sql(alias: str) -> str:
    """The UTF-8 byte length of a message's content as the ORM writes it for the database."""
    rows = Message.objects.using(alias).annotate(n_bytes=OctetLength("content"))
    size, _ = rows.query.get_compiler(using=alias).compile(rows.query.annotations["n_bytes"])
    return size


# ---------------------------------------------------------------------------------------------
# The conversation's lock, compiled once


def locked_conversation_query(conversation_id, user_id=None):
    """The conversation with its user, the user's memory profile and its character, locking
    its row and the profile's (I4's seq, W8's memory write lock); only a user's own with
    `user_id`. The ORM reference of `lock_conversation`."""
    qs = Conversation.objects.select_related("user__memory_profile", "character").filter(
        pk=conversation_id
    )
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    return qs.filter(user__memory_profile__isnull=False).select_for_update(
        of=("self", "user__memory_profile")
    )


_SOME_CONVERSATION = uuid.UUID("00000000-0000-4000-8000-00000000c0de")
_SOME_USER = -7_340_032
_compiled = threading.local()


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple
    at: dict[str, int]  # where each argument goes in `params`
    compiler: object  # the statement's SQLCompiler: its select list and model structure
    init_list: list[str]
    start: int
    end: int
    populators: list


def lock_conversation(alias: str, conversation_id, user_id=None) -> Conversation | None:
    """`locked_conversation_query(...).first()`, with its SQL compiled once per thread and
    database instead of on every turn: the statement runs on the connection's cursor and its
    row becomes the same objects `ModelIterable` builds (Django's converters, `from_db` and
    select_related's populators), so the result is the ORM's."""
    connection = connections[alias]
    built = getattr(_compiled, "entries", None)
    if built is None:
        built = _compiled.entries = {}
    key = (alias, id(connection), user_id is not None)
    found = built.get(key)
    if found is None:
        found = built[key] = _compile_lock(alias, user_id is not None)
    field = Conversation._meta.pk
    params = list(found.params)
    params[found.at["conversation"]] = field.get_db_prep_value(
        field.to_python(conversation_id), connection
    )
    if user_id is not None:
        params[found.at["user"]] = user_id
    with connection.cursor() as cursor:
        cursor.execute(found.sql, params)
        rows = cursor.fetchall()
    for row in found.compiler.results_iter([rows]):
        conversation = Conversation.from_db(alias, found.init_list, row[found.start : found.end])
        for populator in found.populators:
            populator.populate(row, conversation)
        return conversation
    return None


def _compile_lock(alias: str, with_user: bool) -> _Compiled:
    query = locked_conversation_query(_SOME_CONVERSATION, _SOME_USER if with_user else None)
    query = query.order_by("pk")[:1]  # as `first()` runs it
    compiler = query.query.get_compiler(using=alias)
    sql, params = compiler.as_sql()
    prepared = Conversation._meta.pk.get_db_prep_value(_SOME_CONVERSATION, connections[alias])
    at = {"conversation": list(params).index(prepared)}
    if with_user:
        at["user"] = list(params).index(_SOME_USER)
    klass_info, select = compiler.klass_info, compiler.select
    fields = klass_info["select_fields"]
    start, end = fields[0], fields[-1] + 1
    return _Compiled(
        sql,
        tuple(params),
        at,
        compiler,
        [f[0].target.attname for f in select[start:end]],
        start,
        end,
        get_related_populators(klass_info, select, alias),
    )
