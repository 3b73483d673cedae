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

Each section of the file is one exporter (`rows.memory_row`, `turn_row` …) and one
`SnapshotInput` field whose canonical form (`serializer.data`) is exactly what the exporter
writes: that is how an imported row is compared with a stored one, and what the round-trip
test holds to."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from config.api import flatten_errors
from config.clock import db_now
from config.errors import ImportConflict, ValidationError
from conversations.models import Character, Conversation, Message, Turn
from memory.forgetting import purge_covered
from memory.models import (
    IdempotencyRecord,
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    SlotRetraction,
    Tombstone,
)
from memory.selectors.records import tombstones_of
from memory.withholding import withhold_links, withhold_memory_links
from policy.models import DecisionLog, MediaJob, PolicyAnswer, PolicyRule, UserPolicyVersion

from .import_events import import_events
from .references import memory_scope_id
from .rows import (
    JOB_FIELDS,
    answer_row,
    conversation_row,
    decision_row,
    idempotency_row,
    job_row,
    memory_row,
    message_content,
    message_row,
    retraction_row,
    rule_row,
    tombstone_content,
    tombstone_row,
    turn_content,
    turn_row,
    user_object_apply,
    user_profile_apply,
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


def _conflict(what: str, ident) -> ImportConflict:
    return ImportConflict(f"{what} {ident} exists with other content; nothing was imported.")


class _Import:
    """The write half of an import: every row already passed `SnapshotInput`."""

    def __init__(self, validated: dict, canonical: dict):
        self.v, self.c = validated, canonical
        self.counts = {"created": 0, "skipped": 0}
        self.purged: list[str] = []

    def rows(self, section: str):
        return list(zip(self.v[section], self.c[section], strict=True))

    def create(self, model, objects: list, what: str) -> None:
        """New rows in bulk; a unique constraint that a stored row already holds is a conflict."""
        if not objects:
            return
        try:
            with transaction.atomic():
                model.objects.bulk_create(objects, batch_size=500)
        except IntegrityError:
            raise ImportConflict(
                f"A {what} of the snapshot collides with a stored one; nothing was imported."
            ) from None
        self.counts["created"] += len(objects)

    def merge(self, model, section: str, what: str, *, as_dict, build, same=None) -> list:
        """Rows by id: a stored row of this user with the same content is skipped; one with
        other content, or another user's, is a conflict; the rest are created."""
        rows = self.rows(section)
        stored = model.objects.in_bulk([v["id"] for v, _ in rows])
        new = []
        for v, c in rows:
            row = stored.get(v["id"])
            if row is None:
                new.append(build(v, c))
                continue
            mine, theirs = as_dict(row), dict(c)
            if same is not None:
                mine, theirs = same(row, mine, theirs)
            if getattr(row, "user_id", None) != self.user.pk or mine != theirs:
                raise _conflict(what, v["id"])
            self.counts["skipped"] += 1
        self.create(model, new, what)
        return new

    # -- the sections, in the order their references need -------------------------------------

    def run(self):
        self.import_keys()
        self.import_user()
        self.import_characters()
        self.import_conversations()
        self.import_memories()
        self.import_memory_bookkeeping()
        self.import_policy()
        self.apply_tombstones()
        purged = set(self.purged)
        import_events(
            self.user,
            memories=[r for r in self.created_memories if str(r.pk) not in purged],
            tombstones=self.created_tombstones,
            rules=self.created_rules,
            profile=self.profile if self.settings_imported else None,
        )
        return self.user, self.counts

    def import_keys(self) -> None:
        """Registry entries (catalog): created when missing; a cardinality that differs from the
        stored one — or `many` for a key other records already use as `one` — is a conflict."""
        rows = self.v["keys"]
        stored = KeyDefinition.objects.in_bulk([k["key"] for k in rows])
        new = []
        for k in rows:
            existing = stored.get(k["key"])
            if existing is None:
                if k["cardinality"] != "one" and MemoryRecord.objects.filter(key=k["key"]).exists():
                    raise ImportConflict(
                        f"Key {k['key']!r} is used as single-valued here, many in the snapshot."
                    )
                new.append(
                    KeyDefinition(key=k["key"], cardinality=k["cardinality"], label=k["label"])
                )
            elif existing.cardinality != k["cardinality"]:
                raise ImportConflict(
                    f"Key {k['key']!r} has cardinality {existing.cardinality} here, "
                    f"{k['cardinality']} in the snapshot."
                )
            else:
                self.counts["skipped"] += 1
        self.create(KeyDefinition, new, "key")

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
        self.profile = self._import_secret(data.get("secret"))
        self.settings_imported = user_profile_apply(self.profile, data)

    def _import_secret(self, secret: str | None) -> MemoryProfile:
        """F1: the secret keying value hashes must carry over, unless hashes made with another
        one are already stored here. Returns the user's profile."""
        user = self.user
        profile = MemoryProfile.objects.select_for_update().filter(user=user).first()
        if not secret:
            if profile is None:
                profile = MemoryProfile.objects.create(user=user)
            return profile
        if profile is None:
            profile = MemoryProfile.objects.create(user=user, secret=secret)
        elif profile.secret != secret:
            hashed = (
                Tombstone.objects.filter(user=user, value_hash__isnull=False).exists()
                or SlotRetraction.objects.filter(user=user).exclude(value_hash="").exists()
                or IdempotencyRecord.objects.filter(user=user).exists()
            )
            if hashed:
                raise ImportConflict("The user's value-hash secret differs from the snapshot's.")
            profile.secret = secret
            profile.save(update_fields=["secret"])
        return profile

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
        user, chars = self.user, self.characters
        self.merge(
            Conversation,
            "conversations",
            "conversation",
            as_dict=lambda e: conversation_row(e, self.slugs),
            build=lambda v, c: Conversation(
                id=v["id"],
                user=user,
                character=chars[v["character"]],
                title=v["title"],
                created_at=v["created_at"],
                last_seq=v["last_seq"],
            ),
        )
        self.merge(
            Message,
            "messages",
            "message",
            as_dict=message_row,
            same=lambda row, mine, theirs: (message_content(mine), message_content(theirs)),
            build=lambda v, c: Message(
                id=v["id"],
                user=user,
                conversation_id=v["conversation"],
                seq=v["seq"],
                role=v["role"],
                content=v["content"],
                created_at=v["created_at"],
            ),
        )
        # A conversation's sequence counter never falls behind its messages (I1: next seq).
        for c in Conversation.objects.filter(user=user):
            top = (
                Message.objects.filter(conversation=c)
                .order_by("-seq")
                .values_list("seq", flat=True)
                .first()
                or 0
            )
            if top > c.last_seq:
                Conversation.objects.filter(pk=c.pk).update(last_seq=top)
        self.merge(
            Turn,
            "turns",
            "turn",
            as_dict=turn_row,
            same=lambda row, mine, theirs: (turn_content(mine), turn_content(theirs)),
            build=lambda v, c: Turn(
                id=v["id"],
                user=user,
                conversation_id=v["conversation"],
                turn_key=v["turn_key"],
                scene=v["scene"],
                status=v["status"],
                user_message_id=v["user_message"],
                reply_message_id=v.get("reply_message"),
                created_at=v["created_at"],
                extracted=c["extracted"],
                learning=v["learning"],
                plan_snapshot=v.get("plan_snapshot"),
                plan_hash=v["plan_hash"],
            ),
        )

    def import_memories(self) -> None:
        user, chars = self.user, self.characters
        sources_of: dict = {}
        ids = [v["id"] for v in self.v["memories"]]
        for memory_id, message_id in MemorySource.objects.filter(memory_id__in=ids).values_list(
            "memory_id", "message_id"
        ):
            sources_of.setdefault(memory_id, []).append(str(message_id))

        def same(row, mine, theirs):
            theirs.setdefault("told_by", [])  # files written before §15 name no teller
            if row.status == "forgotten":
                # A tombstone purged it here (F3): the skeleton is the same row.
                for field in ("value", "status", "status_since", "sources"):
                    mine.pop(field)
                    theirs.pop(field)
            return mine, theirs

        def build(v, c):
            scope = v["scope"]
            kind = scope["kind"]
            teller = (v.get("told_by") or [{"id": "", "name": ""}])[0]
            return MemoryRecord(
                id=v["id"],
                user=user,
                key=v["key"],
                value=v["value"],
                scope_kind=kind,
                scope_id=memory_scope_id(user.username, scope),
                character=chars[scope["character"]] if kind == "character" else None,
                conversation_id=scope.get("conversation"),
                scene=scope.get("scene"),
                status=v["status"],
                status_since=v.get("status_since"),
                authority=v["authority"],
                confidence=v["confidence"],
                valid_from=v["valid_from"],
                valid_until=v.get("valid_until"),
                recorded_at=v["recorded_at"],
                evidence_time=v["evidence_time"],
                retracted_at=v.get("retracted_at"),
                version=v["version"],
                supersedes_id=v.get("supersedes"),
                told_by_connection=str(teller["id"]),
                told_by_name=teller["name"],
            )

        created = self.merge(
            MemoryRecord,
            "memories",
            "memory",
            as_dict=lambda e: memory_row(e, self.slugs, sources_of),
            same=same,
            build=build,
        )
        self.imported_memories = bool(created)
        self.created_memories = created
        sources = {v["id"]: v["sources"] for v in self.v["memories"]}
        links = [MemorySource(memory_id=r.id, message_id=m) for r in created for m in sources[r.id]]
        if links:
            MemorySource.objects.bulk_create(links, batch_size=500)

    def import_memory_bookkeeping(self) -> None:
        """Tombstones, retractions and idempotency records."""
        user = self.user
        self.created_tombstones = self.merge(
            Tombstone,
            "tombstones",
            "tombstone",
            as_dict=tombstone_row,
            same=lambda row, mine, theirs: (tombstone_content(mine), tombstone_content(theirs)),
            build=lambda v, c: Tombstone(
                id=v["id"],
                user=user,
                scope_id=v["scope"],
                key=v["key"],
                value_hash=v["value_hash"],
                forgotten_at=v["forgotten_at"],
                blocks_sources_before=v["blocks_sources_before"],
                forgotten_by=v["forgotten_by"],
            ),
        )
        # F6 and F7.2: the links each tombstone carries, restored beside what is stored.
        stored = {str(t.pk): t for t in Tombstone.objects.filter(user=user)}
        for v, c in self.rows("tombstones"):
            tombstone = stored[str(v["id"])]
            withhold_links(tombstone, c["withheld_messages"], c["withheld_replies"])
            withhold_memory_links(tombstone, c["withheld_memories"])
        have = {tuple(retraction_row(r).values()) for r in SlotRetraction.objects.filter(user=user)}
        new = []
        for v, c in self.rows("retractions"):
            ident = tuple(c.values())
            if ident in have:
                self.counts["skipped"] += 1
                continue
            have.add(ident)
            new.append(
                SlotRetraction(
                    user=user,
                    scope_id=v["scope"],
                    key=v["key"],
                    value_hash=v["value_hash"],
                    retracted_at=v["retracted_at"],
                )
            )
        self.create(SlotRetraction, new, "retraction")
        stored = {
            i.key: i
            for i in IdempotencyRecord.objects.filter(
                user=user, key__in=[v["key"] for v in self.v["idempotency"]]
            )
        }
        new = []
        for v, c in self.rows("idempotency"):
            existing = stored.get(v["key"])
            if existing is not None:
                if idempotency_row(existing) != dict(c):
                    raise _conflict("idempotency key", v["key"])
                self.counts["skipped"] += 1
                continue
            new.append(
                IdempotencyRecord(
                    user=user,
                    key=v["key"],
                    payload_hmac=v["payload_hmac"],
                    outcome=v["outcome"],
                    reason=v["reason"],
                    record_id=v.get("record"),
                    created_at=v["created_at"],
                )
            )
        self.create(IdempotencyRecord, new, "idempotency record")

    def import_policy(self) -> None:
        user, chars = self.user, self.characters

        def same_rule(row, mine, theirs):
            if row.supersedes_id is None and theirs.get("supersedes"):
                theirs["supersedes"] = None  # its predecessor was deleted here (SET_NULL)
            return mine, theirs

        def build_rule(v, c):
            scope, kind = v["scope"], v["scope"]["kind"]
            return PolicyRule(
                id=v["id"],
                user=user,
                capability_id=v["capability"],
                effect=v["effect"],
                source=v["source"],
                scope_kind=kind,
                character=chars[scope["character"]] if kind == "character" else None,
                conversation_id=scope.get("conversation"),
                scene=scope.get("scene"),
                requested_by=v.get("requested_by"),
                valid_from=v["valid_from"],
                valid_until=v.get("valid_until"),
                revoked_at=v.get("revoked_at"),
                version=v["version"],
                supersedes_id=v.get("supersedes"),
                created_at=v["created_at"],
            )

        self.created_rules = self.merge(
            PolicyRule,
            "policy_rules",
            "policy rule",
            as_dict=lambda e: rule_row(e, self.slugs),
            same=same_rule,
            build=build_rule,
        )

        wanted = self.v["policy_version"].get("user", 0)
        row, _ = UserPolicyVersion.objects.select_for_update().get_or_create(user=user)
        if wanted > row.version:  # D7: versions only increase
            row.version = wanted
            row.save(update_fields=["version"])

        self.merge(
            DecisionLog,
            "decisions",
            "decision",
            as_dict=decision_row,
            build=lambda v, c: DecisionLog(
                id=v["id"],
                user=user,
                capability=v["capability"],
                requested_by=v["requested_by"],
                effect=v["effect"],
                reason=v["reason"],
                rule_ids=[str(r) for r in v["rule_ids"]],
                defaults_version=v["defaults_version"],
                user_version=v["user_version"],
                scope_ids=list(v["scope_ids"]),
                decided_at=v["decided_at"],
                requester=v["requester"],
            ),
        )
        self.merge(
            MediaJob,
            "media_jobs",
            "media job",
            as_dict=lambda e: job_row(e, self.slugs),
            build=lambda v, c: MediaJob(
                id=v["id"],
                user=user,
                capability_id=v["capability"],
                character=chars[v["character"]] if v.get("character") else None,
                conversation_id=v.get("conversation"),
                decision_id=v["decision_id"],
                start_decision_id=v.get("start_decision_id"),
                created_at=v["created_at"],
                started_at=v.get("started_at"),
                finished_at=v.get("finished_at"),
                **{f: v[f] for f in JOB_FIELDS if f != "decision_rule_ids"},
                decision_rule_ids=[str(r) for r in v["decision_rule_ids"]],
            ),
        )
        self.merge(
            PolicyAnswer,
            "answers",
            "answer",
            as_dict=answer_row,
            build=lambda v, c: PolicyAnswer(
                id=v["id"],
                user=user,
                decision_id=v["decision"],
                answer=v["answer"],
                remember=v["remember"],
                rule_id=v.get("rule"),
                media_job_id=v.get("media_job"),
                answered_at=v["answered_at"],
            ),
        )

    def apply_tombstones(self) -> None:
        """F3: existing tombstones apply to what was imported."""
        if not self.imported_memories:
            return

        tombstones = tombstones_of(self.user)
        if tombstones:
            self.purged = [
                p.id
                for p in purge_covered(
                    self.user, tombstones, MemoryProfile.objects.get(user=self.user).secret_bytes()
                )
            ]
