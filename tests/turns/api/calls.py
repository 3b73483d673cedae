"""The turn API's calls, shared by its tests: create a turn, read its prompt plan, forget."""


def turn(api, conv, key, content, **extra):
    return api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content, **extra},
        format="json",
    )


def plan(api, turn_id, **params):
    params.setdefault("budget", 2000)
    return api.get(f"/api/v1/turns/{turn_id}/prompt-plan", params)


def forget(api, memory_id, **body) -> dict:
    """A forget that must succeed (its tombstone)."""
    r = api.post(f"/api/v1/memories/{memory_id}/forget", body, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def seed_history_and_memories(sam, conv, n, *, message_text, memory_value):
    """`n` user messages and `n` user-scope memories, each memory sourced from the first
    message, written in bulk: what the constant-query plan tests grow their world with."""
    from config.clock import db_now
    from conversations.models import Message
    from memory.models import MemorySource
    from tests.factories import user_facts

    Message.objects.bulk_create(
        [
            Message(
                user=sam,
                conversation=conv,
                seq=i + 1,
                role="user",
                content=message_text(i),
                created_at=db_now(),
            )
            for i in range(n)
        ]
    )
    conv.last_seq = n
    conv.save()
    now = db_now()
    rows = user_facts(sam, n, value=lambda i: memory_value(i), now=now)
    first = Message.objects.filter(conversation=conv).first()
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=first) for r in rows])
