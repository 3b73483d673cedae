"""Writers for users, characters and conversations (DESIGN habit 2)."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction

from config import metrics
from config.clock import db_now
from config.errors import NotFound

from .models import Character, Conversation

User = get_user_model()
log = logging.getLogger("companion.conversations")


def user_put(*, ref: str, email: str = "") -> tuple[User, bool]:
    """PUT /users/{user}: create the user if needed (201) or return it (200). API-created users
    have no usable password until one is set (they sign in to the pages once it is)."""
    from memory.services import ensure_profile

    with transaction.atomic():
        user = User.objects.filter(username=ref).first()
        created = False
        if user is None:
            try:
                with transaction.atomic():
                    user = User(username=ref, email=email)
                    user.set_unusable_password()
                    user.save()
                    created = True
            except IntegrityError:
                user = User.objects.get(username=ref)
        ensure_profile(user)
    return user, created


def character_put(*, slug: str, name: str) -> tuple[Character, bool]:
    """PUT /characters/{slug}: create or rename (201 when created, 200 when it existed)."""
    with transaction.atomic():
        character = Character.objects.select_for_update().filter(slug=slug).first()
        if character is not None:
            if character.name != name:
                character.name = name
                character.save(update_fields=["name"])
            return character, False
        try:
            with transaction.atomic():
                return Character.objects.create(slug=slug, name=name, created_at=db_now()), True
        except IntegrityError:
            return Character.objects.get(slug=slug), False


def conversation_create(*, user, character: Character, title: str = "") -> Conversation:
    return Conversation.objects.create(user=user, character=character, title=title, created_at=db_now())


def conversation_delete(*, conversation_id, user=None) -> None:
    """SPEC §7: deleting a conversation deletes its messages and turns; memories keep their
    evidence time but lose those sources (P1 then applies). Scope-bound memories of the
    conversation go with it."""
    qs = Conversation.objects.filter(pk=conversation_id)
    if user is not None:
        qs = qs.filter(user=user)
    with transaction.atomic():
        conversation = qs.select_for_update().first()
        if conversation is None:
            raise NotFound("No such conversation.")
        _delete_conversation_rows(conversation)


def _delete_conversation_rows(conversation: Conversation) -> None:
    from memory.models import MemoryRecord, MemorySource

    MemorySource.objects.filter(message__conversation=conversation).delete()
    # Records scoped to this conversation (or its scenes) cannot outlive it; supersedes edges
    # among them point inside the same set, so clear them before deleting.
    scoped = MemoryRecord.objects.filter(user=conversation.user, conversation=conversation)
    scoped.update(supersedes=None)
    MemoryRecord.objects.filter(user=conversation.user, supersedes__in=scoped).update(supersedes=None)
    scoped.delete()
    conversation.delete()


# ---------------------------------------------------------------------------------------------
# Turns (SPEC §7: I1, I4) and replies


from dataclasses import dataclass  # noqa: E402

from django.conf import settings  # noqa: E402

from config.errors import Conflict, ValidationError  # noqa: E402

from .models import Message, Turn  # noqa: E402


def _check_content(content: str, *, field: str = "content") -> None:
    limit = settings.COMPANION["MESSAGE_MAX_CHARS"]
    if not isinstance(content, str) or not content.strip():
        raise ValidationError("A message must not be empty.", field=field)
    if len(content) > limit:
        raise ValidationError(f"A message is at most {limit} characters.", field=field)
    if "\x00" in content:
        raise ValidationError("Must not contain NUL characters.", field=field)


def _append_message(conversation: Conversation, *, role: str, content: str, at) -> Message:
    """Allocate the next `seq` under the conversation's row lock (held by the caller)."""
    conversation.last_seq += 1
    Conversation.objects.filter(pk=conversation.pk).update(last_seq=conversation.last_seq)
    return Message.objects.create(
        user=conversation.user, conversation=conversation, seq=conversation.last_seq,
        role=role, content=content, created_at=at,
    )


@dataclass
class TurnResult:
    turn: Turn
    created: bool


def turn_create(*, conversation_id, turn_key: str, content: str, scene: str | None = None, user=None) -> TurnResult:
    """I1/I4: store the user message with the next seq, create the turn (unique per
    conversation and key), run the extractor on the message (SPEC §8) and keep the outcomes.
    A retry with the same key and content returns the same turn; other content is a 409.

    I8: with the user's `learn` switch off nothing is extracted and the turn records
    `learning = False`. The switch comes with the conversation's row (no query of its own).

    One transaction, in few statements whatever the data: (1) the conversation with its user,
    character and memory profile, locking the conversation (seq, I4) and the profile (the
    memory write lock, W8) at once; (2) the clock, the turn already stored under this key and
    the user's most recently named thing (the extractor's "it"), read after the locks so they
    see every committed write; (3) when facts were extracted, one read of their slots
    (`memory.services.write_extracted`); (4) every write — the new records and their sources,
    the seq, the message and the turn — as one statement on PostgreSQL (`RowWriter`). A correction
    extracted from the message goes through `memory_correct`/`memory_assert` as ever, so the
    message is stored before it."""
    from memory.services import RowWriter

    if not isinstance(turn_key, str) or not (1 <= len(turn_key) <= 255):
        raise ValidationError("1–255 characters.", field="turn_key")
    _check_content(content)
    with transaction.atomic():
        conversation = _lock_conversation(conversation_id, user)
        profile = conversation.user.memory_profile
        learning = profile.learn
        now, existing_id, last_named = _turn_reads(conversation, turn_key, learning=learning)
        if existing_id is not None:
            existing = Turn.objects.select_related("user_message").get(pk=existing_id)
            existing.conversation = conversation  # the row locked above, with its user
            if existing.user_message.content != content or (existing.scene or None) != (scene or None):
                raise Conflict("This turn_key was used with other content.")
            metrics.turn_created(False)
            return TurnResult(existing, False)
        conversation.last_seq += 1
        message = Message(
            user=conversation.user, conversation=conversation, seq=conversation.last_seq,
            role="user", content=content, created_at=now,
        )
        turn = Turn(
            user=conversation.user, conversation=conversation, turn_key=turn_key, scene=scene or None,
            user_message=message, created_at=now, learning=learning,
        )
        writer = RowWriter()
        stored = False
        if learning:
            stored, turn.extracted, records = _extract(
                conversation, scene, message, secret=profile.secret_bytes(), last_named=last_named,
                writer=writer,
            )
            if records is not None:
                turn.extracted_records = records
        if not stored:
            _message_rows(writer, conversation, message)
        writer.insert([turn])
        writer.flush()
    metrics.turn_created(True)
    return TurnResult(turn, True)


def _lock_conversation(conversation_id, user) -> Conversation:
    """The conversation with its user, character and memory profile, its row and the profile's
    locked in one statement. A user without a profile yet (one made outside `user_put`) gets
    one first."""
    from memory.services import ensure_profile

    qs = Conversation.objects.select_related("user__memory_profile", "character").filter(pk=conversation_id)
    if user is not None:
        qs = qs.filter(user=user)
    locked = qs.filter(user__memory_profile__isnull=False).select_for_update(of=("self", "user__memory_profile"))
    conversation = locked.first()
    if conversation is None:
        plain = qs.first()
        if plain is None:
            raise NotFound("No such conversation.")
        ensure_profile(plain.user)
        conversation = locked.first()
    return conversation


def _turn_reads(conversation: Conversation, turn_key: str, *, learning: bool):
    """(now, id of the turn stored under `turn_key` or None, the user's most recently named
    thing or None) in one statement, run after the locks so it sees every committed write.
    The clock is the database's (SPEC §0, as `config.clock.db_now`): `clock_timestamp()` on
    PostgreSQL, this process's on SQLite."""
    from django.db import connection
    from django.utils import timezone

    from memory.selectors import last_named_key_query

    parts, params = [], []
    for qs in (Turn.objects.filter(conversation=conversation, turn_key=turn_key).values_list("pk", flat=True)[:1],
               *((last_named_key_query(conversation.user),) if learning else ())):
        sql, found = qs.query.get_compiler(connection=connection).as_sql()
        parts.append(f"({sql})")
        params += found
    postgres = connection.vendor == "postgresql"
    if postgres:
        parts.append("clock_timestamp()")
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), params)
        row = cursor.fetchone()
    now = row[-1].astimezone(UTC) if postgres else timezone.now()
    existing = uuid.UUID(str(row[0])) if row[0] is not None else None
    return now, existing, row[1] if learning else None


def _message_rows(writer, conversation: Conversation, message: Message) -> None:
    """The conversation's new `last_seq` and the message (its seq allocated under the
    conversation's row lock, SPEC §7)."""
    writer.update(Conversation, conversation.pk, last_seq=conversation.last_seq)
    writer.insert([message])


def _extract(conversation: Conversation, scene, message: Message, *, secret: bytes, last_named, writer):
    """SPEC §8 for the turn's message, under the locks `turn_create` holds: the plain facts as
    one batch (`memory.services.write_extracted`), valid from the message's time, their rows
    gathered in `writer` with the turn's. Answers (whether the message is stored already, the
    outcomes as the turn keeps them, the records by id as the writes left them — None when a
    correction ran, the turn's answer then reads them).

    A correction goes through `memory_correct`/`memory_assert` as it always did, seeing every
    fact before it and checking that its source message exists: then the message and each
    batch are written before it."""
    from conversations.selectors import LoadedContext
    from memory.extract import extract
    from memory.services import remember_extracted, write_extracted

    found = extract(message.content, last_named_key=last_named)
    corrects = any(item.correction for item in found)
    if corrects:
        _message_rows(writer, conversation, message)
        writer.flush()
    ctx = LoadedContext(
        user=conversation.user, character=conversation.character, conversation=conversation,
        scene=scene or None, now=message.created_at, now_given=True,
    )
    sources = [str(message.pk)]
    results = remember_extracted(
        ctx=ctx, found=found, sources=sources,
        write_batch=lambda batch: write_extracted(
            user=conversation.user, found=batch, sources=sources, source_time=message.created_at,
            secret=secret, now=message.created_at, writer=None if corrects else writer,
        ),
    )
    extracted = [
        {"outcome": r.outcome, "memory": r.record.id if r.record else None, **({"reason": r.reason} if r.reason else {})}
        for r in results
    ]
    records = None if corrects else {r.record.id: r.record for r in results if r.record is not None}
    return corrects, extracted, records


@dataclass
class ReplyResult:
    message: Message
    replayed: bool


def turn_commit_reply(*, turn_id, content: str, user=None) -> ReplyResult:
    """I4: the assistant reply of a turn is committed exactly once. Retries and concurrent
    requests, with the same or other content, get the first committed message.

    The turn is claimed first: `UPDATE … SET reply_message = <new id> WHERE reply_message IS
    NULL`. That statement takes the turn's row lock, and a concurrent claim waits for it and
    then finds the turn replied (PostgreSQL re-checks the condition on the row it waited for;
    SQLite runs one writer at a time), so only one request goes on to allocate the next `seq`
    under the conversation's row (§7) and insert the message. The message's foreign key is
    checked at commit, after its insert.

    PostgreSQL: one statement (the claim, the seq and the insert as data-modifying CTEs).
    SQLite: three, in one transaction. A replay, or a lost race, reads the first message: one
    query more."""
    _check_content(content)
    try:
        turn_id = uuid.UUID(str(turn_id))
    except ValueError:
        raise NotFound("No such turn.") from None
    message_id = uuid.uuid4()
    if connection.vendor == "postgresql":
        message = _reply_postgres(turn_id, message_id, content, user)
    else:
        with transaction.atomic():
            message = _reply_portable(turn_id, message_id, content, user)
    if message is None:
        return _replayed_reply(turn_id, user)
    metrics.reply_committed(False)
    return ReplyResult(message, False)


def _reply_tables() -> dict[str, str]:
    q = connection.ops.quote_name
    return {
        "turn": q(Turn._meta.db_table), "conversation": q(Conversation._meta.db_table),
        "message": q(Message._meta.db_table),
    }


def _reply_postgres(turn_id, message_id, content: str, user) -> Message | None:
    t = _reply_tables()
    owner = " AND user_id = %(user)s" if user is not None else ""
    sql = f"""
        WITH claimed AS (
            UPDATE {t["turn"]} SET reply_message_id = %(message)s, status = 'replied'
            WHERE id = %(turn)s AND reply_message_id IS NULL{owner}
            RETURNING conversation_id, user_id
        ), allocated AS (
            UPDATE {t["conversation"]} c SET last_seq = c.last_seq + 1
            FROM claimed WHERE c.id = claimed.conversation_id
            RETURNING c.id, c.last_seq
        )
        INSERT INTO {t["message"]} (id, user_id, conversation_id, seq, role, content, created_at)
        SELECT %(message)s, claimed.user_id, allocated.id, allocated.last_seq, 'assistant',
               %(content)s, clock_timestamp()
        FROM claimed, allocated
        RETURNING user_id, conversation_id, seq, created_at
    """
    params = {"message": message_id, "turn": turn_id, "content": content,
              "user": user.pk if user is not None else None}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    user_id, conversation_id, seq, created_at = row
    return Message(id=message_id, user_id=user_id, conversation_id=conversation_id, seq=seq,
                   role="assistant", content=content, created_at=created_at.astimezone(UTC))


def _reply_portable(turn_id, message_id, content: str, user) -> Message | None:
    t = _reply_tables()
    owner = " AND user_id = %s" if user is not None else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {t['turn']} SET reply_message_id = %s, status = 'replied' "
            f"WHERE id = %s AND reply_message_id IS NULL{owner} RETURNING conversation_id, user_id",
            [message_id.hex, turn_id.hex, *([user.pk] if user is not None else [])],
        )
        claimed = cursor.fetchone()
        if claimed is None:
            return None
        conversation_id, user_id = claimed
        cursor.execute(
            f"UPDATE {t['conversation']} SET last_seq = last_seq + 1 WHERE id = %s RETURNING last_seq",
            [conversation_id],
        )
        (seq,) = cursor.fetchone()
    return Message.objects.create(
        id=message_id, user_id=user_id, conversation_id=uuid.UUID(str(conversation_id)), seq=seq,
        role="assistant", content=content, created_at=db_now(),
    )


def _replayed_reply(turn_id, user) -> ReplyResult:
    """The turn's first reply (one query), or 404 when there is no such turn (of `user`)."""
    qs = Turn.objects.select_related("reply_message").filter(pk=turn_id)
    if user is not None:
        qs = qs.filter(user=user)
    turn = qs.first()
    if turn is None or turn.reply_message is None:
        raise NotFound("No such turn.")
    metrics.reply_committed(True)
    return ReplyResult(turn.reply_message, True)


@dataclass
class PromptPlanResult:
    turn: Turn
    plan: object  # planner.Plan
    decisions: list
    params: object  # planner.PlanParams


def turn_prompt_plan(*, turn_id, budget: int, memory_share: float = 0.3, history: str = "contiguous",
                     capabilities: tuple[str, ...] = (), now=None, user=None,
                     memory_order: str = "certainty") -> PromptPlanResult:
    """SPEC §7: the prompt plan of a turn (`GET /turns/{id}/prompt-plan`): the turn is read
    with its conversation, user (and memory profile), character and user message in one
    query, then planned by `plan_for_turn`."""
    qs = Turn.objects.select_related(
        "conversation__character", "conversation__user__memory_profile", "user_message"
    ).filter(pk=turn_id)
    if user is not None:
        qs = qs.filter(user=user)
    turn = qs.first()
    if turn is None:
        raise NotFound("No such turn.")
    return plan_for_turn(turn, budget=budget, memory_share=memory_share, history=history,
                         capabilities=capabilities, now=now, memory_order=memory_order)


def plan_for_turn(turn: Turn, *, budget: int, memory_share: float = 0.3, history: str = "contiguous",
                  capabilities: tuple[str, ...] = (), now=None, memory_order: str = "certainty",
                  now_given: bool | None = None) -> PromptPlanResult:
    """SPEC §7: the prompt plan of a loaded turn — history before the turn's message under the
    budget (I1, I3), the memories through the resolver and projection (I2, I5) in the chosen
    order (I6), and policy decisions for the requested capabilities. The turn keeps the
    plan's ids and hash. The user's `use` switch (I8) comes with the user's profile.

    Reads nothing the turn carries: `turn.conversation` (with its user, the user's memory
    profile and its character) and `turn.user_message` must be loaded — by the GET's one
    query, or by turn creation itself (I7: the one round trip plans the turn it just created
    or replayed without reading it again). Queries: the memory read (records with their
    sources; tombstones with the secret; the registry), one for the history (candidates with
    the text of the newest messages the budget could admit, and of the two the relevance
    query takes), the policy decisions when capabilities are asked for, and the turn's
    snapshot update. Under `skip` a message admitted past the first one that did not fit
    costs one more query for its text.

    `now` defaults to the database clock; `now_given` says whether the caller chose it (the
    GET's `now`), as `LoadedContext.now_given`."""
    from memory.domain import RESOLVER_VERSION
    from memory.selectors import ContextResolution
    from memory.switches import memory_settings_of
    from policy.services import decisions_make

    from .planner import QUERY_HISTORY, PlanMessage, PlanParams, build_plan, plan_snapshot
    from .selectors import LoadedContext, history_with_contents
    from .tokens import estimate_message

    params = PlanParams(budget=budget, memory_share=memory_share, history=history,
                        capabilities=tuple(dict.fromkeys(capabilities)), memory_order=memory_order)
    conversation = turn.conversation
    ctx = LoadedContext(
        user=conversation.user, character=conversation.character, conversation=conversation,
        scene=turn.scene, now=now if now is not None else db_now(),
        now_given=(now is not None) if now_given is None else now_given,
    )
    switches = memory_settings_of(conversation.user)
    resolved = ContextResolution(ctx)
    current = turn.user_message
    # The history's text is read with its sizes for the newest messages that could fit
    # beside the current message (what the planner admits is among them under `contiguous`).
    room = budget - estimate_message(current.content)
    relevance = memory_order == "relevance"
    candidates, fetch_content = history_with_contents(
        conversation, current.seq, room, QUERY_HISTORY if relevance else 0)
    recent = None
    pinned: frozenset[str] = frozenset()
    if relevance:
        pinned = resolved.registry.pinned_keys
        recent = [fetch_content([c.id])[c.id] for c in reversed(candidates[-QUERY_HISTORY:])]
    plan = build_plan(
        current=PlanMessage(str(current.pk), current.seq, current.role, current.content),
        history=(),
        history_candidates=candidates,
        fetch_content=fetch_content,
        memories=resolved.projection.prompt,
        memory_excluded=list(resolved.resolution.excluded) + list(resolved.projection.excluded),
        params=params, resolver_version=RESOLVER_VERSION,
        pinned_keys=pinned, recent=recent, use_memories=switches.use,
    )
    decisions = decisions_make(context=ctx, capabilities=list(params.capabilities)) if params.capabilities else []
    snapshot = plan_snapshot(plan)
    snapshot["now"] = ctx.now.isoformat()
    snapshot["params"] = {"budget": budget, "memory_share": memory_share, "history": history,
                          "capabilities": list(params.capabilities), "memory_order": memory_order}
    snapshot["decisions"] = [d.decision_id for d in decisions]
    Turn.objects.filter(pk=turn.pk).update(plan_snapshot=snapshot, plan_hash=plan.plan_hash)
    turn.plan_snapshot, turn.plan_hash = snapshot, plan.plan_hash
    log.info(
        "prompt_plan turn=%s %s history=%d memories=%d excluded=%d tokens=%d budget=%d "
        "memory_order=%s memory_use=%s plan_hash=%s",
        turn.pk, resolved.log_line(), len(plan.history), len(plan.memories), len(plan.excluded),
        plan.estimated_tokens, budget, memory_order, "on" if switches.use else "off", plan.plan_hash,
    )
    return PromptPlanResult(turn, plan, decisions, params)


def user_delete(*, user) -> None:
    """DELETE /users/{user}: erase everything of that user synchronously (SPEC §9). Memory
    rows go first so supersedes edges between them never block the cascade."""
    from memory.models import MemoryRecord
    from support.grants import reveals_forget_user
    from support.models import SupportAction

    with transaction.atomic():
        for conversation in Conversation.objects.filter(user=user):
            _delete_conversation_rows(conversation)
        MemoryRecord.objects.filter(user=user).update(supersedes=None)
        # Support's notes about this user go too: a staff-written reason may quote them.
        SupportAction.objects.filter(subject_id=user.pk).delete()
        # S2: the reveals and the access log stay, the user replaced by a pseudonym.
        reveals_forget_user(user=user)
        user.delete()
