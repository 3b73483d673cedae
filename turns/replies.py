"""A turn's reply, committed exactly once (SPEC §7 I4): one statement on PostgreSQL, three
on other databases; a retry of a committed reply answers the same message, a different reply
to a committed turn is a conflict."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import connection, transaction

from config import metrics
from config.errors import NotFound
from conversations.models import Message, Turn
from memory.withholding import withheld_exists

from . import reply_storage
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
        committed = reply_storage.commit_postgres(turn_id, message_id, content, user)
    else:
        with transaction.atomic():
            committed = reply_storage.commit_portable(turn_id, message_id, content, user)
    if committed is None:
        return _replayed_reply(turn_id, user)
    message, withheld = committed
    if withheld is None:  # a forget committed after the statement's snapshot: read again
        withheld = Turn.objects.filter(pk=turn_id, reply_withholdings__isnull=False).exists()
    metrics.reply_committed(False)
    return ReplyResult(message, False, withheld)


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
