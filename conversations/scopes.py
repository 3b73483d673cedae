"""Where things apply (SPEC §1, §6): the one home of scopes — their kinds and the references
each kind has, their stable ids and the parsing of them, their JSON shape, whether a scope
applies at a place, and the columns a stored scope fills. Memory records and policy rules
share all of it; only the widest kind's name differs (memory's `user`, policy's `global`).
Standard library only (docs/DESIGN.md, habit 1); the database's check of a row's scope is
built from `SCOPE_REFERENCES` by `conversations.models.scope_shapes`."""

from __future__ import annotations

from dataclasses import dataclass

SCOPE_KINDS = ("user", "character", "conversation", "scene")
# P3/I3: scene is the narrowest scope, user the widest.
SCOPE_NARROWNESS = {"user": 0, "character": 1, "conversation": 2, "scene": 3}
# The references each kind has, and no other (SPEC §1, §6): a stored scope's columns hold
# exactly these. `user` and `global` are the widest kinds of memory and of policy.
SCOPE_REFERENCES = {
    "user": (),
    "global": (),
    "character": ("character",),
    "conversation": ("conversation",),
    "scene": ("conversation", "scene"),
}
WIDEST = ("user", "global")


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


# ---------------------------------------------------------------------------------------------
# Ids (SPEC §1): `user:<ref>`, `character:<ref>:<slug>`, `conversation:<id>`,
# `scene:<id>:<scene>`. User refs, slugs and conversation ids never hold a colon; a scene id
# may, so it is always the rest of the id.


def scope_id_of(
    kind: str, user: str, character: str | None, conversation: str | None, scene: str | None
) -> str:
    """The stable scope id of SPEC §1 (a policy rule's `global` scope is its user's)."""
    if kind in WIDEST:
        return f"user:{user}"
    if kind == "character":
        return f"character:{user}:{character}"
    if kind == "conversation":
        return f"conversation:{conversation}"
    return f"scene:{conversation}:{scene}"


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
        return scope_id_of(self.kind, user, self.character, self.conversation, self.scene)

    def as_dict(self) -> dict:
        return scope_dict(self.kind, self.character, self.conversation, self.scene)

    @classmethod
    def of_columns(cls, row):
        """The scope a stored row's columns hold (a memory record, a rule, a media job): its
        kind, its character's slug, its conversation's id and its scene."""
        return cls(
            kind=row.scope_kind,
            character=row.character.slug if row.character_id else None,
            conversation=str(row.conversation_id) if row.conversation_id else None,
            scene=row.scene,
        )


def scope_of_id(scope_id: str) -> Scope:
    """The scope a stored id names (SPEC §1), without joining characters or conversations; an
    id of no narrower kind is the user's."""
    kind, _, rest = scope_id.partition(":")
    if kind == "character":
        return Scope("character", character=rest.rpartition(":")[2])
    if kind == "conversation":
        return Scope("conversation", conversation=rest)
    if kind == "scene":
        conversation, _, scene = rest.partition(":")
        return Scope("scene", conversation=conversation, scene=scene)
    return Scope("user")


def scope_dict_of_id(scope_id: str) -> dict:
    """The JSON shape of a stored scope id (SPEC §1, C5): `user:<ref>` → `{"kind": "user"}`,
    `character:<ref>:<slug>` → `{"kind": "character", "character": slug}`,
    `conversation:<id>` and `scene:<id>:<scene>` likewise, and a forget's `*` (every scope)
    → `{"kind": "everywhere"}`."""
    if scope_id == "*":
        return {"kind": "everywhere"}
    return scope_of_id(scope_id).as_dict()


def place_of_scope_ids(scope_ids) -> dict:
    """The place a list of scope ids was seen from (the inverse of `scope_ids_of`): its
    character slug, conversation id and scene, each None where no id names it (D8 answers
    find a logged decision's context this way; D10 keeps ids only)."""
    out: dict = {"character": None, "conversation": None, "scene": None}
    for scope_id in scope_ids:
        scope = scope_of_id(scope_id)
        if scope.kind == "character":
            out["character"] = scope.character
        elif scope.kind in ("conversation", "scene"):
            out["conversation"] = scope.conversation
            if scope.kind == "scene":
                out["scene"] = scope.scene
    return out


# ---------------------------------------------------------------------------------------------
# Matching (R1, D1)


def scope_applies(
    scope, character: str | None, conversation: str | None, scene: str | None
) -> bool:
    """R1 and D1's scope test: does a record's or rule's `scope` (anything with `kind`,
    `character`, `conversation` and `scene`) apply at the place of this character,
    conversation and scene? The widest kind applies everywhere; a narrower one needs the same
    character, conversation, or conversation and scene. Whose it is is the caller's check."""
    kind = scope.kind
    if kind in WIDEST:
        return True
    if kind == "character":
        return character is not None and scope.character == character
    if kind == "conversation":
        return conversation is not None and scope.conversation == conversation
    if kind == "scene":
        return (
            scene is not None
            and conversation is not None
            and scope.conversation == conversation
            and scope.scene == scene
        )
    return False


# ---------------------------------------------------------------------------------------------
# Columns: a stored scope's `scope_kind`, `character_id`, `conversation_id` and `scene`


USER_SCOPE_COLUMNS = {
    "scope_kind": "user",
    "character_id": None,
    "conversation_id": None,
    "scene": None,
}


def scope_columns(
    user: str,
    character: tuple[str, object] | None,
    conversation_id: object | None,
    scene: str | None,
) -> dict[str, dict]:
    """The columns of new rows of each narrower scope a place sees, by scope id: its character
    (`(slug, primary key)`), its conversation and its scene, as far as it names them (the user
    scope has its own, `USER_SCOPE_COLUMNS`)."""
    columns = {}
    if character is not None:
        slug, character_id = character
        columns[f"character:{user}:{slug}"] = {
            **USER_SCOPE_COLUMNS,
            "scope_kind": "character",
            "character_id": character_id,
        }
    if conversation_id is not None:
        columns[f"conversation:{conversation_id}"] = {
            **USER_SCOPE_COLUMNS,
            "scope_kind": "conversation",
            "conversation_id": conversation_id,
        }
        if scene:
            columns[f"scene:{conversation_id}:{scene}"] = {
                **USER_SCOPE_COLUMNS,
                "scope_kind": "scene",
                "conversation_id": conversation_id,
                "scene": scene,
            }
    return columns
