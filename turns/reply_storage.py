"""A turn's reply committed once (SPEC §7 I4, `turns.replies`): its statements — one on
PostgreSQL (the claim, the seq and the insert as data-modifying CTEs), three on other
databases, run in the caller's transaction. Each answers the new message and whether a forget
withholds it, or None when the turn is not there to claim (already replied, or not the
user's)."""

from __future__ import annotations

import uuid
from datetime import UTC

from django.db import connection

from config.clock import db_now
from conversations.models import Conversation, Message, Turn
from memory.state import profile_table, version_table
from memory.withholding_storage import turn_held_sql


def _reply_tables() -> dict[str, str]:
    q = connection.ops.quote_name
    return {
        "turn": q(Turn._meta.db_table),
        "conversation": q(Conversation._meta.db_table),
        "message": q(Message._meta.db_table),
        "profile": q(profile_table()),
        "version": q(version_table()),
    }


def commit_postgres(turn_id, message_id, content: str, user) -> tuple[Message, bool | None] | None:
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


def commit_portable(turn_id, message_id, content: str, user) -> tuple[Message, bool] | None:
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
