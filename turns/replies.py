"""A turn's reply, committed exactly once (SPEC §7 I4): one statement on PostgreSQL, three
on other databases; a retry of a committed reply answers the same message, a different reply
to a committed turn is a conflict."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC

from django.db import connection, transaction

from config import metrics
from config.clock import db_now
from config.errors import NotFound
from conversations.models import Conversation, Message, Turn
from memory.state import profile_table, version_table
from memory.withholding import turn_held_sql, withheld_exists

from .creation import check_content


@dataclass
class ReplyResult:
    message: Message
    replayed: bool
    withheld: bool = False  # F6, F7.1: a forget withholds the reply (its answer shows no text)


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
    query more.

    F6 part 3: the statement also takes the user's memory profile row in share mode before it
    stamps the reply's time, so a forget (which holds that row for update) and a reply are
    ordered: a reply that waited commits after the forget and is withheld through the hold the
    forget wrote on its turn; a forget that waited sees the reply committed before its
    `forgotten_at`. SQLite runs one writer at a time.

    F7.1: the answer says whether the reply is withheld — a forget made since the turn was
    created holds its reply (F6 part 3: its plan held what the forget purged or withheld, or
    its own message is withheld). The statement reads the holds with its snapshot, and the
    user's memory version both as that snapshot saw it and as it is once the memory write
    lock is taken (every forget changes it, `memory.triggers`): when they differ a forget may
    have committed after the snapshot, and the holds are read again (one query more, only
    then)."""
    check_content(content)
    try:
        turn_id = uuid.UUID(str(turn_id))
    except ValueError:
        raise NotFound("No such turn.") from None
    message_id = uuid.uuid4()
    if connection.vendor == "postgresql":
        committed = _reply_postgres(turn_id, message_id, content, user)
    else:
        with transaction.atomic():
            committed = _reply_portable(turn_id, message_id, content, user)
    if committed is None:
        return _replayed_reply(turn_id, user)
    message, withheld = committed
    if withheld is None:  # a forget committed after the statement's snapshot: read again
        withheld = Turn.objects.filter(pk=turn_id, reply_withholdings__isnull=False).exists()
    metrics.reply_committed(False)
    return ReplyResult(message, False, withheld)


def _reply_tables() -> dict[str, str]:
    q = connection.ops.quote_name
    return {
        "turn": q(Turn._meta.db_table),
        "conversation": q(Conversation._meta.db_table),
        "message": q(Message._meta.db_table),
        "profile": q(profile_table()),
        "version": q(version_table()),
    }


def _reply_postgres(turn_id, message_id, content: str, user) -> tuple[Message, bool | None] | None:
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
        ), ordered AS (
            SELECT p.user_id FROM {t["profile"]} p JOIN claimed ON p.user_id = claimed.user_id
            FOR SHARE OF p
        ), versions AS (
            SELECT v.version AS locked, (
                SELECT s.version FROM {t["version"]} s WHERE s.user_id = v.user_id
            ) AS seen
            FROM {t["version"]} v JOIN ordered ON v.user_id = ordered.user_id
            FOR SHARE OF v
        )
        INSERT INTO {t["message"]} (id, user_id, conversation_id, seq, role, content, created_at)
        SELECT %(message)s, claimed.user_id, allocated.id, allocated.last_seq, 'assistant',
               %(content)s, clock_timestamp()
        FROM claimed CROSS JOIN allocated LEFT JOIN ordered ON true
        RETURNING user_id, conversation_id, seq, created_at, {turn_held_sql("%(turn)s")},
            COALESCE((SELECT locked <> seen FROM versions), false)
    """
    params = {
        "message": message_id,
        "turn": turn_id,
        "content": content,
        "user": user.pk if user is not None else None,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    # `versions`: the user's version row locked after the memory write lock (its newest
    # version) and as the snapshot saw it; a user without one has never had a memory to forget.
    user_id, conversation_id, seq, created_at, held, moved = row
    message = Message(
        id=message_id,
        user_id=user_id,
        conversation_id=conversation_id,
        seq=seq,
        role="assistant",
        content=content,
        created_at=created_at.astimezone(UTC),
    )
    return message, None if moved else bool(held)


def _reply_portable(turn_id, message_id, content: str, user) -> tuple[Message, bool] | None:
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
        # One writer at a time: the holds read here are every forget's committed before.
        cursor.execute(
            f"UPDATE {t['conversation']} SET last_seq = last_seq + 1 WHERE id = %s RETURNING "
            f"last_seq, {turn_held_sql('%s')}",
            [conversation_id, turn_id.hex],
        )
        seq, held = cursor.fetchone()
    message = Message.objects.create(
        id=message_id,
        user_id=user_id,
        conversation_id=uuid.UUID(str(conversation_id)),
        seq=seq,
        role="assistant",
        content=content,
        created_at=db_now(),
    )
    return message, bool(held)


def _replayed_reply(turn_id, user) -> ReplyResult:
    """The turn's first reply (one query) and whether a forget withholds it, or 404 when there
    is no such turn (of `user`)."""
    qs = (
        Turn.objects.select_related("reply_message")
        .annotate(reply_withheld=withheld_exists("reply_message_id"))
        .filter(pk=turn_id)
    )
    if user is not None:
        qs = qs.filter(user=user)
    turn = qs.first()
    if turn is None or turn.reply_message is None:
        raise NotFound("No such turn.")
    metrics.reply_committed(True)
    return ReplyResult(turn.reply_message, True, turn.reply_withheld)
