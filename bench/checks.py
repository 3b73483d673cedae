"""Self-checks run on each benchmark database: the hot-path readers (plain cursor, values
converted in bulk) give exactly what the ORM path gives — same records, same order, same
types and tzinfo (compared by repr) — on this vendor."""

from __future__ import annotations

from .data import SCENES


def selectors_match_orm(info) -> dict:
    from django.contrib.auth import get_user_model

    from conversations.models import Conversation
    from conversations.selectors import load_context
    from memory.models import MemoryRecord
    from memory.selectors import records as selectors
    from memory.selectors.resolution import ContextResolution
    from memory.state import ContextMemory
    from turns.planner import HistoryCandidate
    from turns.selectors import OctetLength, history_candidates

    user = get_user_model().objects.get(pk=info.user_pk)
    ctx = load_context(
        {
            "user": user.username,
            "character": info.character,
            "conversation": info.conversation,
            "scene": SCENES[0],
        }
    )

    def same(a, b) -> bool:
        return [repr(x) for x in a] == [repr(x) for x in b]

    out = {}
    qs = MemoryRecord.objects.filter(user=user)
    out["records_to_domain"] = same(
        selectors.records_to_domain(qs, user.username),
        selectors._records_to_domain_orm(qs, user.username),
    )
    held, _ = ContextMemory(user, ctx.domain.scope_ids()).read()
    cqs = MemoryRecord.objects.filter(user=user, scope_id__in=ctx.domain.scope_ids())
    out["context_state"] = sorted(
        held.state.records, key=lambda r: (r.scope_id, r.key, r.version)
    ) == selectors._records_to_domain_orm(cqs, user.username)
    resolved = ContextResolution(ctx)
    out["tombstones"] = same(resolved.tombstones, selectors.tombstones_of(user))
    conversation = Conversation.objects.get(pk=info.conversation)
    rows = (
        conversation.messages.filter(user_id=user.pk, seq__lt=10**9)
        .annotate(n_bytes=OctetLength("content"))
        .values_list("id", "seq", "role", "n_bytes")
    )
    out["history_candidates"] = same(
        history_candidates(conversation, 10**9),
        [HistoryCandidate(str(i), s, r, n or 0) for i, s, r, n in rows],
    )
    from turns.selectors import message_contents

    some = [c.id for c in history_candidates(conversation, 10**9)][-40:]
    orm = {
        str(i): c
        for i, c in conversation.messages.filter(user_id=user.pk, pk__in=some).values_list(
            "id", "content"
        )
    }
    mine = message_contents(conversation, some)
    out["message_contents"] = list(mine.items()) == list(orm.items())
    out["all"] = all(out.values())
    return out
