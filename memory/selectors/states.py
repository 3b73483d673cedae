"""Memories with their effective state (SPEC E1): the resolver's own pass run for each
record in its own scope, over every stored record of its scoped key, in a constant number of
queries. The API and every surface read a memory's state through here."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from ..domain import MemoryRecord as DomainRecord
from ..domain import RecordState
from ..domain import Tombstone as DomainTombstone
from ..models import KeyDefinition, MemoryProfile, MemoryRecord, Tombstone
from ..resolver import record_states
from ..storage import RECORD_FIELDS, TOMBSTONE_COLUMNS, tombstone_from_row
from .records import (
    links_of,
    memory_get,
    records_to_domain,
    registry_tombstones_secret,
    row_to_domain,
)

# ---------------------------------------------------------------------------------------------
# Effective states (SPEC E1): the resolver's own pass, each record in its own scope


def memory_states(
    user, records: Iterable[DomainRecord], *, now: datetime
) -> dict[str, RecordState]:
    """E1 for some records of `user` at `now`, by id: every stored record of their scoped keys
    is read (supersession and precedence stay within a scoped key), with the tombstones of
    their keys and the registry — two queries whatever the number of records (one more where
    the registry is not cached). Records given that are not stored (yet) count as given."""
    records = list(records)
    if not records:
        return {}
    keys = sorted({r.key for r in records})
    scope_ids = sorted({r.scope_id for r in records})
    stored = records_to_domain(
        MemoryRecord.objects.filter(user=user, key__in=keys, scope_id__in=scope_ids), user.username
    )
    keyed, tombstones, secret = registry_tombstones_secret(user, keys)
    seen = {r.id for r in stored}
    pool = stored + [r for r in records if r.id not in seen]
    return record_states(pool, tombstones, now, many_keys=keyed.many_keys, secret=secret)


@dataclasses.dataclass(frozen=True)
class StatedMemory:
    """A record with its E1 state."""

    record: DomainRecord
    state: RecordState


def memory_stated(record_id, *, now: datetime, user=None) -> StatedMemory:
    """One record by id (`memory_get_domain`) with its E1 state at `now`."""
    row = memory_get(record_id, user=user)
    owner = row.user
    stored = records_to_domain(
        MemoryRecord.objects.filter(user=owner, key=row.key, scope_id=row.scope_id), owner.username
    )
    keyed, tombstones, secret = registry_tombstones_secret(owner, [row.key])
    states = record_states(stored, tombstones, now, many_keys=keyed.many_keys, secret=secret)
    record = next(r for r in stored if r.id == str(row.pk))
    return StatedMemory(record, states[record.id])


def memory_stated_many(user, ids: Iterable[str], *, now: datetime) -> dict[str, StatedMemory]:
    """Records of `user` by id, each with its E1 state at `now`: every record of their scoped
    keys is read in one statement (the scoped keys of the ids as a subquery), and the
    tombstones of their keys in one more."""
    wanted = MemoryRecord.objects.filter(user=user, pk__in=list(ids))
    stored = records_to_domain(
        MemoryRecord.objects.filter(
            user=user, key__in=wanted.values("key"), scope_id__in=wanted.values("scope_id")
        ),
        user.username,
    )
    if not stored:
        return {}
    keys = sorted({r.key for r in stored})
    keyed, tombstones, secret = registry_tombstones_secret(user, keys)
    states = record_states(stored, tombstones, now, many_keys=keyed.many_keys, secret=secret)
    asked = {str(i) for i in ids}
    return {r.id: StatedMemory(r, states[r.id]) for r in stored if r.id in asked}


def memory_list(
    user,
    *,
    key: str | None = None,
    scope_id: str | None = None,
    status: str | None = None,
    state: str | None = None,
    include_withheld: bool = False,
    now: datetime,
) -> list[StatedMemory]:
    """`GET /memories`: the user's stored records (of a key, of a scope id), each with its E1
    state at `now`, filtered by stored status and by state, ordered by key, scope id and
    version — so a page cut from it and its count agree with the filter. A key and a scope
    id select whole scoped keys, so each state is decided with every record of its scoped key;
    the status and state filters apply after. A record a forget withholds (F7.2) is left out
    unless `include_withheld` (the caller masks it). Two queries (three where the registry is
    not cached), whatever the number of records."""
    qs = MemoryRecord.objects.filter(user=user)
    if key:
        qs = qs.filter(key=key)
    if scope_id:
        qs = qs.filter(scope_id=scope_id)
    records = records_to_domain(qs, user.username)
    keyed, tombstones, secret = registry_tombstones_secret(user, [key] if key else None)
    states = record_states(records, tombstones, now, many_keys=keyed.many_keys, secret=secret)
    found = [
        StatedMemory(r, states[r.id])
        for r in records
        if (not status or r.status == status)
        and (not state or states[r.id].state == state)
        and (include_withheld or not r.withheld_by)
    ]
    found.sort(key=lambda m: (m.record.key, m.record.scope_id, m.record.version, m.record.id))
    return found


def memory_states_of(queryset, *, now: datetime) -> dict[str, RecordState]:
    """E1 at `now` for the records `queryset` selects, of any users (the admin's lists and
    filters), by id — with every record of their scoped keys read too, so the answer is the
    one `GET /memories` gives for each. A constant number of queries: the scoped keys, their
    records with sources, the tombstones, the secrets, the registry."""
    slots = set(
        queryset.order_by().values_list("user_id", "user__username", "scope_id", "key").distinct()
    )
    if not slots:
        return {}
    users = {user_id: username for user_id, username, _, _ in slots}
    keys = sorted({key for _, _, _, key in slots})
    scope_ids = sorted({scope_id for _, _, scope_id, _ in slots})
    stored = MemoryRecord.objects.filter(
        user_id__in=sorted(users), key__in=keys, scope_id__in=scope_ids
    )
    rows = list(stored.values_list("user_id", *RECORD_FIELDS))
    sources, withheld = links_of(stored.values("id"))
    by_user: dict[int, list[DomainRecord]] = defaultdict(list)
    for user_id, *row in rows:
        by_user[user_id].append(row_to_domain(tuple(row), users[user_id], sources, withheld))
    tombs: dict[int, list[DomainTombstone]] = defaultdict(list)
    for t in Tombstone.objects.filter(user_id__in=sorted(users), key__in=keys).values_list(
        "user_id", *TOMBSTONE_COLUMNS
    ):
        tombs[t[0]].append(tombstone_from_row(t[1:], users[t[0]]))
    # Every user's secret, whether or not a value-level tombstone needs it: the query count
    # does not depend on what was forgotten.
    secrets = dict(
        MemoryProfile.objects.filter(user_id__in=sorted(users)).values_list("user_id", "secret")
    )
    # The keys' registry rows, read here whether or not the process's catalog cache is warm.
    many_keys = frozenset(
        KeyDefinition.objects.filter(key__in=keys, cardinality="many").values_list("key", flat=True)
    )
    states: dict[str, RecordState] = {}
    for user_id, records in by_user.items():
        secret = secrets.get(user_id)
        states.update(
            record_states(
                records,
                tombs.get(user_id, ()),
                now,
                many_keys=many_keys,
                secret=bytes.fromhex(secret) if secret else b"",
            )
        )
    return states
