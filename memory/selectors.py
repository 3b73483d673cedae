"""Reads of memory state. Every query filters by user first (SPEC §0). The resolver's
candidate read is one query for records, one for their sources and one for tombstones,
whatever the number of records (DESIGN: constant query counts)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable

from config.errors import NotFound, ValidationError

from .domain import MemoryRecord as DomainRecord
from .domain import Scope, default_label
from .domain import Tombstone as DomainTombstone
from .models import KeyDefinition, MemoryProfile, MemoryRecord, MemorySource, Tombstone

RECORD_FIELDS = (
    "id", "key", "value", "scope_kind", "scope_id", "scene", "status", "status_since",
    "authority", "confidence", "valid_from", "valid_until", "recorded_at", "evidence_time",
    "supersedes_id", "retracted_at", "version",
)


def scope_from_id(kind: str, scope_id: str, scene: str | None = None) -> Scope:
    """Rebuild a Scope from its stable id (SPEC §1) without joining characters or
    conversations: user refs, slugs and UUIDs never contain a colon."""
    if kind == "user":
        return Scope("user")
    if kind == "character":
        return Scope("character", character=scope_id.rsplit(":", 1)[1])
    if kind == "conversation":
        return Scope("conversation", conversation=scope_id.split(":", 1)[1])
    _, conversation, scene_id = scope_id.split(":", 2)
    return Scope("scene", conversation=conversation, scene=scene if scene is not None else scene_id)


def _to_domain(row: tuple, username: str, sources: dict) -> DomainRecord:
    (id_, key, value, kind, scope_id, scene, status, status_since, authority, confidence,
     valid_from, valid_until, recorded_at, evidence_time, supersedes, retracted_at, version) = row
    rid = str(id_)
    return DomainRecord(
        id=rid, user=username, key=key, value=value, scope=scope_from_id(kind, scope_id, scene),
        authority=authority, valid_from=valid_from, recorded_at=recorded_at,
        evidence_time=evidence_time, version=version, status=status, status_since=status_since,
        confidence=confidence, valid_until=valid_until,
        supersedes=str(supersedes) if supersedes else None, retracted_at=retracted_at,
        sources=tuple(sorted(sources.get(rid, ()))),
    )


def records_to_domain(queryset, username: str) -> list[DomainRecord]:
    """Materialise a queryset of MemoryRecord rows as pure-core records, sources included
    (two queries: rows as tuples, then their source links)."""
    rows = list(queryset.values_list(*RECORD_FIELDS))
    if not rows:
        return []
    sources: dict[str, list[str]] = defaultdict(list)
    links = MemorySource.objects.filter(memory_id__in=queryset.values("id")).values_list("memory_id", "message_id")
    for memory_id, message_id in links:
        sources[str(memory_id)].append(str(message_id))
    return [_to_domain(row, username, sources) for row in rows]


def context_scope_ids(ctx) -> list[str]:
    """The scope ids a context can see (R1 pre-filter in SQL; the resolver still decides)."""
    d = ctx.domain
    ids = [f"user:{d.user}"]
    if d.character:
        ids.append(f"character:{d.user}:{d.character}")
    if d.conversation:
        ids.append(f"conversation:{d.conversation}")
        if d.scene:
            ids.append(f"scene:{d.conversation}:{d.scene}")
    return ids


def candidate_records(ctx, keys: Iterable[str] | None = None) -> list[DomainRecord]:
    qs = MemoryRecord.objects.filter(user=ctx.user, scope_id__in=context_scope_ids(ctx))
    if keys:
        qs = qs.filter(key__in=list(keys))
    return records_to_domain(qs, ctx.user.username)


def tombstones_of(user, keys: Iterable[str] | None = None) -> list[DomainTombstone]:
    qs = Tombstone.objects.filter(user=user)
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return [
        DomainTombstone(
            id=str(t[0]), user=user.username, scope_id=t[1], key=t[2], value_hash=t[3],
            forgotten_at=t[4], blocks_sources_before=t[5],
        )
        for t in qs.values_list("id", "scope_id", "key", "value_hash", "forgotten_at", "blocks_sources_before")
    ]


class Registry:
    """The key registry as the pure core needs it: which keys are `many`, and labels."""

    def __init__(self, rows: Iterable[tuple[str, str, str]]):
        self.cardinality: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        for key, cardinality, label in rows:
            self.cardinality[key] = cardinality
            self.labels[key] = label
        self.many_keys = frozenset(k for k, c in self.cardinality.items() if c == "many")

    def is_many(self, key: str) -> bool:
        return key in self.many_keys

    def label(self, key: str) -> str:
        return self.labels.get(key) or default_label(key)


def registry(keys: Iterable[str] | None = None) -> Registry:
    qs = KeyDefinition.objects.all()
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return Registry(qs.values_list("key", "cardinality", "label"))


def user_secret(user) -> bytes:
    secret = MemoryProfile.objects.filter(user=user).values_list("secret", flat=True).first()
    return bytes.fromhex(secret) if secret else b""


def parse_uuid(value, *, field: str = "id") -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise NotFound(f"No {field} {value!r}.") from None


def memory_get(record_id, *, user=None) -> MemoryRecord:
    """A record by id; with `user`, only that user's (another user's record is a 404)."""
    qs = MemoryRecord.objects.select_related("user")
    if user is not None:
        qs = qs.filter(user=user)
    record = qs.filter(pk=parse_uuid(record_id, field="memory")).first()
    if record is None:
        raise NotFound("No such memory.")
    return record


def memory_get_domain(record_id, *, user=None) -> DomainRecord:
    record = memory_get(record_id, user=user)
    return records_to_domain(MemoryRecord.objects.filter(pk=record.pk), record.user.username)[0]


def scope_id_valid(scope_id: str) -> bool:
    return bool(scope_id) and scope_id.split(":", 1)[0] in ("user", "character", "conversation", "scene")


def history_records(user, key: str, scope_id: str) -> list[DomainRecord]:
    if not scope_id_valid(scope_id):
        raise ValidationError("Not a scope id.", field="scope")
    qs = MemoryRecord.objects.filter(user=user, key=key, scope_id=scope_id)
    return records_to_domain(qs, user.username)


def last_named_key(user) -> str | None:
    """SPEC §8: "it" is the most recently named thing of the user."""
    return (
        MemoryRecord.objects.filter(user=user, key__endswith=".name")
        .exclude(key__startswith="user.")
        .exclude(key__startswith="people.")
        .order_by("-recorded_at", "-version")
        .values_list("key", flat=True)
        .first()
    )


class ContextResolution:
    """Everything one resolve needs and produces, for one context (SPEC §3, §5)."""

    def __init__(self, ctx, keys=None):
        from django.conf import settings

        from .projection import project
        from .resolver import resolve

        keys = list(keys) if keys else None
        self.ctx = ctx
        self.records = candidate_records(ctx, keys)
        self.registry = registry()
        self.tombstones = tombstones_of(ctx.user, keys)
        secret = user_secret(ctx.user) if any(t.value_hash for t in self.tombstones) else b""
        self.resolution = resolve(
            self.records, self.tombstones, ctx.domain, many_keys=self.registry.many_keys, secret=secret
        )
        cfg = settings.COMPANION
        self.projection = project(
            self.resolution.active, labels=self.registry.labels, many_keys=self.registry.many_keys,
            likely=cfg["CERTAINTY_LIKELY"], uncertain=cfg["CERTAINTY_UNCERTAIN"],
        )

    def log_line(self) -> str:
        """SPEC §12: ids, counts, reasons and versions only — never a value."""
        counts: dict[str, int] = {}
        for e in self.resolution.excluded:
            counts[e.reason] = counts.get(e.reason, 0) + 1
        for e in self.projection.excluded:
            counts["prompt_" + e.reason] = counts.get("prompt_" + e.reason, 0) + 1
        parts = [
            f"user_id={self.ctx.user.pk}",
            f"memory_candidates={len(self.records)}",
            f"memory_active={len(self.resolution.active)}",
            f"memory_prompt={len(self.projection.prompt)}",
        ]
        parts += [f"excluded_{k.replace('-', '_')}={v}" for k, v in sorted(counts.items())]
        from .domain import RESOLVER_VERSION

        parts.append(f"resolver_version={RESOLVER_VERSION}")
        return " ".join(parts)
