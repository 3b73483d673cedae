"""Identities and where things apply (SPEC §0, §1): scopes, their stable ids and JSON shape,
and the context a resolution or decision is made for. Standard library only (docs/DESIGN.md,
habit 1): memory and policy build on these."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

SCOPE_KINDS = ("user", "character", "conversation", "scene")
# P3/I3: scene is the narrowest scope, user the widest.
SCOPE_NARROWNESS = {"user": 0, "character": 1, "conversation": 2, "scene": 3}


def scope_dict(
    kind: str, character: str | None, conversation: str | None, scene: str | None
) -> dict:
    """The JSON shape of a scope (SPEC §10): only the references its kind has. Memory and
    policy scopes share it (policy's widest kind is `global`, memory's `user`)."""
    out: dict = {"kind": kind}
    if kind == "character":
        out["character"] = character
    if kind in ("conversation", "scene"):
        out["conversation"] = conversation
    if kind == "scene":
        out["scene"] = scene
    return out


def scope_from_id(scope_id: str) -> dict:
    """The JSON shape of a stored scope id (SPEC §1, C5): `user:<ref>` → `{"kind": "user"}`,
    `character:<ref>:<slug>` → `{"kind": "character", "character": slug}`,
    `conversation:<id>` and `scene:<id>:<scene>` likewise, and a forget's `*` (every scope)
    → `{"kind": "everywhere"}`."""
    if scope_id == "*":
        return {"kind": "everywhere"}
    kind, _, rest = scope_id.partition(":")
    if kind == "character":
        return scope_dict(kind, rest.partition(":")[2], None, None)
    if kind == "conversation":
        return scope_dict(kind, None, rest, None)
    if kind == "scene":
        conversation, _, scene = rest.partition(":")
        return scope_dict(kind, None, conversation, scene)
    return scope_dict("user", None, None, None)


def scope_ids_of(
    user: str, character: str | None, conversation: str | None, scene: str | None
) -> list[str]:
    """The scope ids (SPEC §1) a place sees, widest first: the user's, the character's, the
    conversation's and the scene's, as far as the place names them (R1; D10 logs them)."""
    ids = [f"user:{user}"]
    if character:
        ids.append(f"character:{user}:{character}")
    if conversation:
        ids.append(f"conversation:{conversation}")
        if scene:
            ids.append(f"scene:{conversation}:{scene}")
    return ids


@dataclass(frozen=True, slots=True)
class Scope:
    kind: str
    character: str | None = None  # character slug
    conversation: str | None = None  # conversation UUID as a string
    scene: str | None = None

    def scope_id(self, user: str) -> str:
        """The stable scope id of SPEC §1."""
        if self.kind == "user":
            return f"user:{user}"
        if self.kind == "character":
            return f"character:{user}:{self.character}"
        if self.kind == "conversation":
            return f"conversation:{self.conversation}"
        return f"scene:{self.conversation}:{self.scene}"

    def as_dict(self) -> dict:
        return scope_dict(self.kind, self.character, self.conversation, self.scene)


@dataclass(frozen=True, slots=True)
class Context:
    """What a resolution or decision is made for (SPEC §0). `now` is always given."""

    user: str
    character: str | None
    conversation: str | None
    now: datetime
    scene: str | None = None

    def scope_ids(self) -> list[str]:
        """The scope ids this context sees (R1), widest first."""
        return scope_ids_of(self.user, self.character, self.conversation, self.scene)

    def matches(self, scope: Scope, user: str) -> bool:
        """R1 (and D1's scope test): does a record or rule of this scope apply here?"""
        if user != self.user:
            return False
        if scope.kind == "user":
            return True
        if scope.kind == "character":
            return scope.character == self.character
        if scope.kind == "conversation":
            return scope.conversation == self.conversation
        if scope.kind == "scene":
            return (
                self.scene is not None
                and scope.conversation == self.conversation
                and scope.scene == self.scene
            )
        return False
