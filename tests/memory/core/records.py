"""Records, tombstones and contexts for the pure core's tests (no database): times are hours
after T0, UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conversations.domain import Context
from conversations.scopes import Scope
from memory.domain import MemoryRecord, Tombstone
from memory.resolver import resolve

T0 = datetime(2026, 8, 1, tzinfo=UTC)
USER = "ana"
CHAR = "captain-rowan"
CONV = "6f1c3f0e-6a1d-4a57-9d0e-3b8c2f1a9e10"
OTHER_CONV = "0b7e9a52-1c55-4d8e-8a53-2f0f4f3d6c21"
SECRET = b"per-user-secret"
MANY = frozenset({"user.likes"})

USER_SCOPE = Scope("user")
CHAR_SCOPE = Scope("character", character=CHAR)
CONV_SCOPE = Scope("conversation", conversation=CONV)
SCENE_SCOPE = Scope("scene", conversation=CONV, scene="greenhouse")


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def rec(
    id: str,
    *,
    key: str = "pet.name",
    value: str = "Rex",
    scope: Scope = USER_SCOPE,
    authority: str = "rule-extracted",
    vf: float = 0,
    vu: float | None = None,
    version: int = 1,
    status: str = "active",
    since: float | None = None,
    supersedes: str | None = None,
    evidence: float | None = None,
    confidence: float = 1.0,
    user: str = USER,
) -> MemoryRecord:
    return MemoryRecord(
        id=id,
        user=user,
        key=key,
        value=value,
        scope=scope,
        authority=authority,
        valid_from=at(vf),
        recorded_at=at(vf),
        evidence_time=at(vf if evidence is None else evidence),
        version=version,
        status=status,
        status_since=None if since is None else at(since),
        confidence=confidence,
        valid_until=None if vu is None else at(vu),
        supersedes=supersedes,
        sources=("m1",),
    )


def tomb(
    id: str,
    *,
    key: str = "pet.name",
    scope_id: str = f"user:{USER}",
    before: float = 10,
    hashed: str | None = None,
    user: str = USER,
) -> Tombstone:
    return Tombstone(
        id=id,
        user=user,
        scope_id=scope_id,
        key=key,
        forgotten_at=at(before),
        blocks_sources_before=at(before),
        value_hash=hashed,
    )


def ctx(
    now: float = 100, *, scene: str | None = None, character: str = CHAR, conversation: str = CONV
) -> Context:
    return Context(
        user=USER, character=character, conversation=conversation, now=at(now), scene=scene
    )


def run(records, now: float = 100, tombstones=(), **kwargs):
    return resolve(
        records,
        tombstones,
        kwargs.pop("context", None) or ctx(now),
        many_keys=MANY,
        secret=SECRET,
        **kwargs,
    )


def outcome(resolution) -> dict[str, str]:
    """id → reason, "active" for winners."""
    out = {r.id: "active" for r in resolution.active}
    out.update({e.id: e.reason for e in resolution.excluded})
    return out
