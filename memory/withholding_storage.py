"""F6's SQL fragments, which the turn's statements compose (`turns.storage`,
`turns.reply_storage`): whether some tombstone withholds a message or the reply of a turn, and
the ids of a conversation's messages held back, found from the user's tombstones. Beside
`memory.withholding`, which writes the holds, as their statements' home (docs/DESIGN.md,
habit 2: raw SQL only in storage modules)."""

from __future__ import annotations

from django.db import connection

from config.storage import RawReader
from conversations.models import Message, Turn

from .models import Tombstone, Withholding


def withheld_sql(reader: RawReader, message_id: str) -> str:
    """F6: true (1) when some tombstone withholds the message whose id column is
    `message_id` — linked to it, or holding the reply of its turn — else 0."""
    held, turn = reader.table(Withholding), reader.table(Turn)
    return (
        f"CASE WHEN EXISTS (SELECT 1 FROM {held} w WHERE w.{reader.name(Withholding, 'message')}"
        f" = {message_id}) OR EXISTS (SELECT 1 FROM {held} w JOIN {turn} t ON t."
        f"{reader.name(Turn, 'id')} = w.{reader.name(Withholding, 'turn')} WHERE t."
        f"{reader.name(Turn, 'reply_message')} = {message_id}) THEN 1 ELSE 0 END"
    )


def turn_held_sql(turn: str) -> str:
    """F6 part 3, F7.1: true when some tombstone holds the reply of the turn whose id is
    `turn` (an SQL expression): the reply that turn commits is withheld."""
    q = connection.ops.quote_name
    return (
        f"EXISTS (SELECT 1 FROM {q(Withholding._meta.db_table)} w WHERE w."
        f"{q(Withholding._meta.get_field('turn').column)} = {turn})"
    )


def withheld_ids_sql(reader: RawReader) -> str:
    """F6: the ids (as text) of a conversation's messages some tombstone withholds — the ones
    `withheld_sql` answers 1 for — found from the user's tombstones, so the read is as long
    as the user's holds, not as the conversation (parameters: user id, conversation id, user
    id, conversation id)."""
    held, tomb = reader.table(Withholding), reader.table(Tombstone)
    message, turn = reader.table(Message), reader.table(Turn)
    name = reader.name
    by_tombstone = (
        f"FROM {held} w JOIN {tomb} b ON b.{name(Tombstone, 'id')} = "
        f"w.{name(Withholding, 'tombstone')} "
    )
    return (
        f"SELECT {reader.column(Message, 'id', 'm.')} {by_tombstone}"
        f"JOIN {message} m ON m.{name(Message, 'id')} = w.{name(Withholding, 'message')} "
        f"WHERE b.{name(Tombstone, 'user')} = %s AND m.{name(Message, 'conversation')} = %s "
        f"UNION SELECT {reader.column(Turn, 'reply_message', 't.')} {by_tombstone}"
        f"JOIN {turn} t ON t.{name(Turn, 'id')} = w.{name(Withholding, 'turn')} "
        f"WHERE b.{name(Tombstone, 'user')} = %s AND t.{name(Turn, 'conversation')} = %s "
        f"AND t.{name(Turn, 'reply_message')} IS NOT NULL"
    )
