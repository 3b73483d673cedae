"""What is remembered now (SPEC §3, §5), for whoever needs the resolver's answer: the resolve
endpoint and prompt plans (`ContextResolution`, one context), support's explain, and the
memory and conversation pages (`remembered_now`, every scope of the user). F5: what the pages
show is what the resolver keeps — nothing else."""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from datetime import UTC, datetime
from typing import NamedTuple

from django.conf import settings

from config import metrics
from config.clock import db_now
from config.storage import gc_paused
from conversations.domain import Context

from ..current import ResolveBasis, resolve_keyed
from ..domain import RESOLVER_VERSION, RecordState, Resolution
from ..domain import MemoryRecord as DomainRecord
from ..domain import Tombstone as DomainTombstone
from ..models import Tombstone
from ..projection import project, withholding_in
from ..resolver import RESOLVER_REASONS, record_states, resolve
from ..state import ContextMemory
from .records import (
    Registry,
)


class ContextResolution:
    """Everything one resolve needs and produces, for one context (SPEC §3, §5)."""

    def __init__(self, ctx, keys=None):
        self.ctx = ctx
        cfg = settings.COMPANION
        # Every object built here is kept until the request ends (see gc_paused).
        with gc_paused():
            remembered = remembered_now(ctx.user, context=ctx, keys=keys)
            self.records, self.registry = remembered.records, remembered.registry
            self.tombstones = remembered.tombstones
            self.resolution = remembered.resolutions[None]
            self.projection = remembered.projection or project(
                self.resolution.active,
                labels=self.registry.labels,
                many_keys=self.registry.many_keys,
                likely=cfg["CERTAINTY_LIKELY"],
                uncertain=cfg["CERTAINTY_UNCERTAIN"],
                withholding=withholding_of(self.resolution.active, self.tombstones, ctx.domain),
            )
        metrics.resolve_observed(len(self.records))  # SPEC §12 O3

    def log_line(self) -> str:
        return resolve_log_line(
            self.ctx.user.pk, len(self.records), self.resolution, self.projection
        )


def withholding_of(records, tombstones, context) -> frozenset[str]:
    """F7.2: the ids of the tombstones withholding some of `records` whose scope covers
    `context` (`memory.projection.withholding_in`). `tombstones` may be those of some keys
    only: the scopes of the others named by the records are read (one query, only then)."""
    wanted = {t for record in records for t in record.withheld_by}
    if not wanted:
        return frozenset()
    found = [t for t in tombstones if t.id in wanted]
    missing = wanted - {t.id for t in found}
    if missing:
        found += [
            _Scoped(str(tid), scope_id)
            for tid, scope_id in Tombstone.objects.filter(pk__in=sorted(missing)).values_list(
                "id", "scope_id"
            )
        ]
    return withholding_in(found, context)


class _Scoped(NamedTuple):
    id: str
    scope_id: str


def resolve_log_line(user_id, n_candidates: int, resolution: Resolution, projection) -> str:
    """SPEC §12: a resolve's ids, counts, reasons and versions — never a value. The resolver's
    exclusions are counted by reason in its trace already (R8)."""
    counts: dict[str, int] = {}
    trace = resolution.trace
    for reason in RESOLVER_REASONS:
        found = trace.get("excluded_" + reason.replace("-", "_"))
        if found is None:  # a resolution without its trace: counted here
            found = sum(1 for e in resolution.excluded if e.reason == reason)
        if found:
            counts[reason] = found
    for e in projection.excluded:
        counts["prompt_" + e.reason] = counts.get("prompt_" + e.reason, 0) + 1
    parts = [
        f"user_id={user_id}",
        f"memory_candidates={n_candidates}",
        f"memory_active={len(resolution.active)}",
        f"memory_prompt={len(projection.prompt)}",
    ]
    parts += [f"excluded_{k.replace('-', '_')}={v}" for k, v in sorted(counts.items())]
    parts.append(f"resolver_version={RESOLVER_VERSION}")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------
# What is remembered now (the pages and the API read it through here)


@dataclasses.dataclass(frozen=True)
class Remembered:
    """What is remembered now for one user (SPEC §3): the records read, the key registry, the
    tombstones, and the resolver's answer — for one context, or for every scope of the user
    (one resolution per scope id)."""

    records: list[DomainRecord]
    registry: Registry
    tombstones: list[DomainTombstone]
    resolutions: dict[str | None, Resolution]  # by scope id; None: the one context asked for
    now: datetime
    projection: object = None  # for one context, when the read made it (P1–P4)
    secret: bytes = b""  # the user's secret, for value-level tombstones (F1)

    @functools.cached_property
    def states(self) -> dict[str, RecordState]:
        """E1: the state of every record read, at `now`, by id (the resolver's pass with each
        record's own scope as the context; every record of a read scoped key is read)."""
        return record_states(
            self.records,
            self.tombstones,
            self.now,
            many_keys=self.registry.many_keys,
            secret=self.secret,
        )

    @property
    def active(self) -> list[DomainRecord]:
        """R7 order (key, then id) across every resolution."""
        if len(self.resolutions) == 1:
            return list(next(iter(self.resolutions.values())).active)
        found = [r for resolution in self.resolutions.values() for r in resolution.active]
        return sorted(found, key=lambda r: (r.key, r.id))

    @property
    def by_id(self) -> dict[str, DomainRecord]:
        return {r.id: r for r in self.records}

    def explain(self, record_id: str):
        """R8 for a record that was read, else None."""
        for resolution in self.resolutions.values():
            found = resolution.explain(record_id)
            if found is not None:
                return found
        return None


def remembered_now(user, *, now: datetime | None = None, context=None, keys=None) -> Remembered:
    """What the resolver keeps for `user` (SPEC §3): for one loaded `context` (the resolve
    endpoint, prompt plans, support's explain), or — without one — in every scope the user has
    (the memories and conversation pages). The records, their sources, the tombstones, the
    registry and the secret are read in bulk, so the query count does not depend on the data.

    Every scope at once is one pure resolve per scope: R1 keeps a scope's records for any
    context that includes that scope, and supersession and precedence never cross scopes (a
    slot lives in one scope), so each scope's answer is exactly the resolver's for every
    context containing it. F5: what the pages show is what the resolver keeps — nothing else.
    Forgotten skeletons are not read there: R2 excludes them and they supersede nothing (R5
    counts only records past R1–R4).

    Every object built here is kept until the request ends, so the cyclic garbage collector
    is paused while they are built (`gc_paused`; it could free none of them)."""
    with gc_paused():
        return _remembered(user, now=now, context=context, keys=keys)


def _remembered(user, *, now, context, keys) -> Remembered:
    keys = list(keys) if keys else None
    if context is not None:
        return _remembered_in_context(user, context, keys)
    return _remembered_in_every_scope(user, now, keys)


def _utc_domain(domain):
    """The context with `now` in UTC's own tzinfo. The resolver compares `now` with every
    record's times: in the records' own tzinfo (UTC) each comparison is a plain one, in an
    equal but different tzinfo object (a parsed `now` carries ZoneInfo("UTC")) each costs two
    utcoffset() calls."""
    if domain.now.tzinfo is not UTC and domain.now.utcoffset() is not None:
        return dataclasses.replace(domain, now=domain.now.astimezone(UTC))
    return domain


def _remembered_in_context(user, context, keys) -> Remembered:
    """One loaded context, through the one door into memory (`memory.state.ContextMemory`):
    its whole memory resolved group of keys by group of keys and kept, or — keys narrowing
    it — the records of those keys resolved once (SPEC §3), from the same state."""
    domain = _utc_domain(context.domain)
    if not keys:
        return _context_remembered(user, context, domain)
    memory = ContextMemory(user, context.domain.scope_ids())
    held, keyed = memory.read()
    wanted = set(keys)
    records = sorted((r for r in held.state.records if r.key in wanted), key=_model_order)
    # Every tombstone of the user, as the whole context's resolve has them: a key's own
    # apply to its records (F3), and those withholding a record (F7.2) are at hand.
    tombstones = _in_model_order(held.state.tombstones)
    secret = memory.secret_bytes
    resolutions = {
        None: resolve(records, tombstones, domain, many_keys=keyed.many_keys, secret=secret)
    }
    return Remembered(records, keyed, tombstones, resolutions, domain.now, secret=secret)


def _model_order(record: DomainRecord) -> tuple:
    """The records' order in the model (scope, key, version): what a queryset answered."""
    return (record.scope_id, record.key, record.version)


def _in_model_order(tombstones: list[DomainTombstone]) -> list[DomainTombstone]:
    """The tombstones' order in the model: the newest forget first, then by id."""
    tombstones = sorted(tombstones, key=lambda t: t.id)
    tombstones.sort(key=lambda t: t.forgotten_at, reverse=True)
    return tombstones


def _scope_contexts(user, records, now) -> dict[str, Context]:
    """The context of each scope the records live in (R1: a scope's own records are kept for
    any context that includes it)."""
    contexts: dict[str, Context] = {}
    for record in records:
        if record.scope_id not in contexts:
            scope = record.scope
            contexts[record.scope_id] = Context(
                user=user.username,
                character=scope.character,
                conversation=scope.conversation,
                scene=scope.scene,
                now=now,
            )
    return contexts


def _remembered_in_every_scope(user, now, keys) -> Remembered:
    """Every scope the user has, read through the one door (`memory.state.ContextMemory` of
    every scope): one pure resolve per scope, forgotten skeletons left out (R2, R5; see
    `remembered_now`)."""
    if now is None:
        now = db_now()
    memory = ContextMemory(user, None)
    held, keyed = memory.read()
    memory.keep(None, keyed)
    wanted = set(keys) if keys else None
    records = [
        r
        for r in held.state.records
        if r.status != "forgotten" and (wanted is None or r.key in wanted)
    ]
    records.sort(key=_model_order)
    tombstones = _in_model_order(
        [t for t in held.state.tombstones if wanted is None or t.key in wanted]
    )
    contexts = _scope_contexts(user, records, now)
    secret = memory.secret_bytes
    by_scope: dict[str, list[DomainRecord]] = defaultdict(list)
    for record in records:
        by_scope[record.scope_id].append(record)
    resolutions = {
        scope_id: resolve(
            by_scope[scope_id],
            tombstones,
            contexts[scope_id],
            many_keys=keyed.many_keys,
            secret=secret,
        )
        for scope_id in sorted(by_scope)
    }
    return Remembered(records, keyed, tombstones, resolutions, now, secret=secret)


def _context_remembered(user, context, domain) -> Remembered:
    """A context's whole memory as the resolver keeps it, in one statement, through the door a
    turn takes (`memory.state.ContextMemory`): the state this process holds as it is while the
    user's memory version (`memory.triggers`) is the one it was kept at, caught up with the
    rows changed after it when no removal came since, else read whole; resolved group of keys
    by group of keys, each group's share reused while it holds
    (`memory.current.resolve_keyed`), and kept for the next request."""
    memory = ContextMemory(user, context.domain.scope_ids())
    held, keyed = memory.read()
    state = held.state
    secret = memory.secret_bytes
    cfg = settings.COMPANION
    basis = ResolveBasis(
        many_keys=keyed.many_keys,
        labels=keyed.labels,
        secret=secret,
        likely=cfg["CERTAINTY_LIKELY"],
        uncertain=cfg["CERTAINTY_UNCERTAIN"],
    )
    resolved = resolve_keyed(state.records, state.tombstones, domain, basis, earlier=held.resolved)
    resolution, projection = resolved.resolution, resolved.projection
    memory.keep(resolved, keyed)
    return Remembered(
        state.records,
        keyed,
        state.tombstones,
        {None: resolution},
        domain.now,
        projection=projection,
        secret=secret,
    )
