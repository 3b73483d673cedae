"""Import (SPEC §9): an export file validated whole, then written in one transaction.

Import validates the whole file first, in one pass and before any row is written
(`turns.portability.shape.SnapshotInput`: the API's own fields and rules, references resolved
inside the file or to the catalog), then writes it in one transaction. It is idempotent: ids
are kept; a row already present with the same content is skipped; an id present with other
content, a row that collides with a stored one, or a key whose cardinality differs, is an
`import_conflict` and nothing is imported. Existing tombstones apply to imported memories (F3).
Export → `DELETE /users/{user}` → import → export gives the same file (but `exported_at`, and
`reveals`: support's reveals of the user's private text are exported read-only, S2 — an import
ignores them and restores none, and deleting the user keeps them only under a pseudonym), and
resolving any context before and after gives the same results and plan hashes.

Each section of the file is one exporter (`rows.turn_row`, memory's `memory_row` …), declared
with the way back from the file to a row (`rows.TURNS`, memory's `MEMORIES` …: a
`config.portability.Section`), and one `SnapshotInput` field whose canonical form
(`serializer.data`) is exactly what the exporter writes: that is how an imported row is
compared with a stored one, and what the round-trip test holds to."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from config.api import flatten_errors
from config.clock import db_now
from config.errors import ValidationError
from config.portability import RowImport
from conversations.models import Character, Conversation, Message
from memory.portability import (
    bookkeeping_import,
    keys_import,
    memories_import,
    profile_import,
    tombstones_apply,
)
from policy.models import UserPolicyVersion

from .import_events import import_events
from .rows import (
    ANSWERS,
    CONVERSATIONS,
    DECISIONS,
    MEDIA_JOBS,
    MESSAGES,
    POLICY_RULES,
    TURNS,
    user_object_apply,
)
from .shape import SnapshotInput

User = get_user_model()


# ---------------------------------------------------------------------------------------------
# Import


def parse_export(data) -> tuple[dict, dict]:
    """Validate a whole export file (SPEC §9) without writing anything. Returns the validated
    rows (Python values) and their canonical JSON form; a 400 naming every bad field
    otherwise."""
    serializer = SnapshotInput(data=data)
    if not serializer.is_valid():
        errors = flatten_errors(serializer.errors)
        first = next(iter(errors.items()))
        raise ValidationError(f"{first[0]}: {first[1][0]}", errors=errors)
    return serializer.validated_data, serializer.data


def user_import(*, data) -> tuple[User, dict]:
    """Import an export file (SPEC §9). Returns the user and counts of created and skipped rows."""
    validated, canonical = parse_export(data)
    with transaction.atomic():
        return _Import(validated, canonical).run()


class _Import(RowImport):
    """The write half of an import: every row already passed `SnapshotInput`. The
    conversation's and the policy's sections are written here, memory's by memory
    (`memory.portability`), in the order their references need."""

    # -- the sections, in the order their references need -------------------------------------

    def run(self):
        keys_import(self)
        self.import_user()
        self.import_characters()
        self.import_conversations()
        memories = memories_import(self)
        tombstones = bookkeeping_import(self)
        self.import_policy()
        purged = set(tombstones_apply(self.user, imported=memories))  # F3
        import_events(
            self.user,
            memories=[r for r in memories if str(r.pk) not in purged],
            tombstones=tombstones,
            rules=self.created_rules,
            profile=self.profile if self.settings_imported else None,
        )
        return self.user, self.counts

    def import_user(self) -> None:
        data = self.v["user"]
        user = User.objects.filter(username=data["ref"]).first()
        created = user is None
        if created:
            user = User(username=data["ref"])
            user_object_apply(user, data, created=True)
            user.set_unusable_password()
            user.save()
            self.counts["created"] += 1
        self.user = user
        self.profile, self.settings_imported = profile_import(user, data)

    def import_characters(self) -> None:
        """Characters are catalog rows: created when missing, never overwritten."""
        rows = self.v["characters"]
        stored = {c.slug: c for c in Character.objects.filter(slug__in=[c["slug"] for c in rows])}
        now = None
        new = []
        for c in rows:
            if c["slug"] in stored:
                self.counts["skipped"] += 1
                continue
            if c.get("created_at") is None and now is None:
                now = db_now()
            new.append(
                Character(slug=c["slug"], name=c["name"], created_at=c.get("created_at") or now)
            )
        self.create(Character, new, "character")
        wanted = {c["slug"] for c in rows}
        wanted |= {c["character"] for c in self.v["conversations"]}
        wanted |= {
            m["scope"]["character"] for m in self.v["memories"] if m["scope"].get("character")
        }
        wanted |= {
            r["scope"]["character"] for r in self.v["policy_rules"] if r["scope"].get("character")
        }
        wanted |= {j["character"] for j in self.v["media_jobs"] if j["character"]}
        self.characters = {c.slug: c for c in Character.objects.filter(slug__in=wanted)}
        self.slugs = {c.pk: c.slug for c in self.characters.values()}

    def import_conversations(self) -> None:
        self.merge(CONVERSATIONS, self.slugs)
        self.merge(MESSAGES)
        # A conversation's sequence counter never falls behind its messages (I1: next seq).
        for c in Conversation.objects.filter(user=self.user):
            top = (
                Message.objects.filter(conversation=c)
                .order_by("-seq")
                .values_list("seq", flat=True)
                .first()
                or 0
            )
            if top > c.last_seq:
                Conversation.objects.filter(pk=c.pk).update(last_seq=top)
        self.merge(TURNS)

    def import_policy(self) -> None:
        self.created_rules = self.merge(POLICY_RULES, self.slugs)
        wanted = self.v["policy_version"].get("user", 0)
        row, _ = UserPolicyVersion.objects.select_for_update().get_or_create(user=self.user)
        if wanted > row.version:  # D7: versions only increase
            row.version = wanted
            row.save(update_fields=["version"])
        self.merge(DECISIONS)
        self.merge(MEDIA_JOBS, self.slugs)
        self.merge(ANSWERS)
