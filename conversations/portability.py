"""Export and import of one user's data (SPEC §9).

The snapshot is one JSON object holding everything that is the user's: conversations,
messages, turns, memories (windows, versions, edges, sources, evidence time, recorded_at),
tombstones, retractions, idempotency records, policy rules, the policy version, decisions,
answers and media jobs, plus the catalog rows they use (characters and key registry entries)
and the user's value-hash secret (F1), so a value-level forget keeps working after a move.

Import is atomic and idempotent: ids are kept; a row already present with the same content
is skipped; an id present with other content, or a key whose cardinality differs, is an
`import_conflict` and nothing is imported. Existing tombstones apply to imported memories
(F3). Resolving any context before export and after import gives the same results and plan
hashes.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.dateparse import parse_datetime

from config.clock import db_now
from config.errors import ImportConflict, ValidationError
from memory.domain import AUTHORITIES, CARDINALITIES, SCOPE_KINDS, STATUSES, valid_key
from memory.models import (
    FORGOTTEN_BY,
    IdempotencyRecord,
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    SlotRetraction,
    Tombstone,
)
from policy.models import DecisionLog, MediaJob, PolicyAnswer, PolicyRule, UserPolicyVersion

from .models import Character, Conversation, Message, Turn

User = get_user_model()

FORMAT = "companion-memory/1"


def _t(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _s(value) -> str | None:
    return None if value is None else str(value)


# ---------------------------------------------------------------------------------------------
# Rows as snapshot dicts (also used to compare an imported row with a stored one)


def _character(c: Character) -> dict:
    return {"slug": c.slug, "name": c.name, "created_at": _t(c.created_at)}


def _conversation(c: Conversation, slugs: dict) -> dict:
    return {"id": str(c.pk), "character": slugs[c.character_id], "title": c.title,
            "created_at": _t(c.created_at), "last_seq": c.last_seq}


def _message(m: Message) -> dict:
    return {"id": str(m.pk), "conversation": str(m.conversation_id), "seq": m.seq, "role": m.role,
            "content": m.content, "created_at": _t(m.created_at)}


def _turn(t: Turn) -> dict:
    return {"id": str(t.pk), "conversation": str(t.conversation_id), "turn_key": t.turn_key,
            "scene": t.scene, "status": t.status, "user_message": str(t.user_message_id),
            "reply_message": _s(t.reply_message_id), "created_at": _t(t.created_at),
            "extracted": t.extracted, "plan_snapshot": t.plan_snapshot, "plan_hash": t.plan_hash}


def _turn_content(t: Turn) -> dict:
    out = _turn(t)
    out.pop("plan_snapshot"), out.pop("plan_hash")
    return out


def _memory(r: MemoryRecord, slugs: dict, sources: dict) -> dict:
    return {
        "id": str(r.pk), "key": r.key, "value": r.value,
        "scope": {"kind": r.scope_kind, "character": slugs.get(r.character_id),
                  "conversation": _s(r.conversation_id), "scene": r.scene},
        "status": r.status, "status_since": _t(r.status_since), "authority": r.authority,
        "confidence": r.confidence, "valid_from": _t(r.valid_from), "valid_until": _t(r.valid_until),
        "retracted_at": _t(r.retracted_at), "recorded_at": _t(r.recorded_at),
        "evidence_time": _t(r.evidence_time), "sources": sorted(sources.get(r.pk, [])),
        "supersedes": _s(r.supersedes_id), "version": r.version,
    }


def _tombstone(t: Tombstone) -> dict:
    return {"id": str(t.pk), "scope": t.scope_id, "key": t.key, "value_hash": t.value_hash,
            "forgotten_at": _t(t.forgotten_at), "blocks_sources_before": _t(t.blocks_sources_before),
            "forgotten_by": t.forgotten_by}


def _retraction(r: SlotRetraction) -> dict:
    return {"scope": r.scope_id, "key": r.key, "value_hash": r.value_hash, "retracted_at": _t(r.retracted_at)}


def _idempotency(i: IdempotencyRecord) -> dict:
    return {"key": i.key, "payload_hmac": i.payload_hmac, "outcome": i.outcome, "reason": i.reason,
            "record": _s(i.record_id), "created_at": _t(i.created_at)}


def _rule(r: PolicyRule, slugs: dict) -> dict:
    return {"id": str(r.pk), "capability": r.capability_id, "effect": r.effect, "source": r.source,
            "scope": {"kind": r.scope_kind, "character": slugs.get(r.character_id),
                      "conversation": _s(r.conversation_id), "scene": r.scene},
            "requested_by": r.requested_by, "valid_from": _t(r.valid_from),
            "valid_until": _t(r.valid_until), "revoked_at": _t(r.revoked_at), "version": r.version,
            "supersedes": _s(r.supersedes_id), "created_at": _t(r.created_at)}


def _decision(d: DecisionLog) -> dict:
    return {"id": str(d.pk), "capability": d.capability, "requested_by": d.requested_by,
            "effect": d.effect, "reason": d.reason, "rule_ids": d.rule_ids,
            "defaults_version": d.defaults_version, "user_version": d.user_version,
            "scope_ids": d.scope_ids, "decided_at": _t(d.decided_at)}


def _answer(a: PolicyAnswer) -> dict:
    return {"id": str(a.pk), "decision": str(a.decision_id), "answer": a.answer, "remember": a.remember,
            "rule": _s(a.rule_id), "media_job": _s(a.media_job_id), "answered_at": _t(a.answered_at)}


JOB_FIELDS = (
    "idempotency_key", "requested_by", "scene", "status", "reason", "decision_effect",
    "decision_reason", "decision_rule_ids", "admission_defaults_version", "admission_user_version",
    "allowed_once", "start_defaults_version", "start_user_version",
)


def _job(j: MediaJob, slugs: dict) -> dict:
    out = {"id": str(j.pk), "capability": j.capability_id, "character": slugs.get(j.character_id),
           "conversation": _s(j.conversation_id), "decision_id": str(j.decision_id),
           "start_decision_id": _s(j.start_decision_id), "created_at": _t(j.created_at),
           "started_at": _t(j.started_at), "finished_at": _t(j.finished_at)}
    out.update({f: getattr(j, f) for f in JOB_FIELDS})
    return out


# ---------------------------------------------------------------------------------------------
# Export


def user_export(*, user) -> dict:
    """The whole snapshot of one user, in a constant number of queries."""
    conversations = list(Conversation.objects.filter(user=user).order_by("created_at", "id"))
    memories = list(MemoryRecord.objects.filter(user=user).order_by("key", "scope_id", "version"))
    rules = list(PolicyRule.objects.filter(user=user).order_by("created_at", "id"))
    jobs = list(MediaJob.objects.filter(user=user).order_by("created_at", "id"))
    character_ids = {c.character_id for c in conversations}
    character_ids |= {r.character_id for r in memories if r.character_id}
    character_ids |= {r.character_id for r in rules if r.character_id}
    character_ids |= {j.character_id for j in jobs if j.character_id}
    characters = list(Character.objects.filter(pk__in=character_ids).order_by("slug"))
    slugs = {c.pk: c.slug for c in characters}
    sources: dict = {}
    for memory_id, message_id in MemorySource.objects.filter(memory__user=user).values_list("memory_id", "message_id"):
        sources.setdefault(memory_id, []).append(str(message_id))
    keys = sorted({r.key for r in memories})
    version = UserPolicyVersion.objects.filter(user=user).values_list("version", flat=True).first() or 0
    from policy.selectors import policy_version_of

    versions = policy_version_of(user)
    profile = MemoryProfile.objects.filter(user=user).first()
    return {
        "format": FORMAT,
        "exported_at": _t(db_now()),
        "user": {"ref": user.username, "email": user.email, "first_name": user.first_name,
                 "last_name": user.last_name, "date_joined": _t(user.date_joined),
                 "secret": profile.secret if profile else None,
                 # The zone the pages show times in (null: the service's).
                 "time_zone": (profile.time_zone or None) if profile else None},
        "characters": [_character(c) for c in characters],
        "conversations": [_conversation(c, slugs) for c in conversations],
        "messages": [_message(m) for m in Message.objects.filter(user=user).order_by("conversation_id", "seq")],
        "turns": [_turn(t) for t in Turn.objects.filter(user=user).order_by("created_at", "id")],
        "memories": [_memory(r, slugs, sources) for r in memories],
        "tombstones": [_tombstone(t) for t in Tombstone.objects.filter(user=user).order_by("forgotten_at", "id")],
        "retractions": [_retraction(r) for r in SlotRetraction.objects.filter(user=user).order_by("retracted_at", "id")],
        "idempotency": [_idempotency(i) for i in IdempotencyRecord.objects.filter(user=user).order_by("created_at", "id")],
        "policy_rules": [_rule(r, slugs) for r in rules],
        "policy_version": {"defaults": versions.defaults, "user": max(version, versions.user)},
        "decisions": [_decision(d) for d in DecisionLog.objects.filter(user=user).order_by("decided_at", "id")],
        "answers": [_answer(a) for a in PolicyAnswer.objects.filter(user=user).order_by("answered_at", "id")],
        "media_jobs": [_job(j, slugs) for j in jobs],
        "keys": [{"key": k.key, "cardinality": k.cardinality, "label": k.label}
                 for k in KeyDefinition.objects.filter(key__in=keys).order_by("key")],
    }


# ---------------------------------------------------------------------------------------------
# Import: validation helpers name the path of the bad field.


class _Reader:
    def __init__(self, data, path: str):
        if not isinstance(data, dict):
            raise ValidationError("Must be an object.", field=path or "body")
        self.data, self.path = data, path

    def _field(self, name):
        return f"{self.path}.{name}" if self.path else name

    def get(self, name, kinds, *, required=True, null=False, default=None):
        if name not in self.data:
            if required:
                raise ValidationError("This field is required.", field=self._field(name))
            return default
        value = self.data[name]
        if value is None:
            if null:
                return None
            raise ValidationError("May not be null.", field=self._field(name))
        if kinds is bool and not isinstance(value, bool):
            raise ValidationError("Must be a boolean.", field=self._field(name))
        if kinds is not bool and (isinstance(value, bool) or not isinstance(value, kinds)):
            raise ValidationError("Wrong type.", field=self._field(name))
        if isinstance(value, str) and "\x00" in value:
            raise ValidationError("Must not contain NUL characters.", field=self._field(name))
        return value

    def text(self, name, *, max_length=None, **kw):
        value = self.get(name, str, **kw)
        if value is not None and max_length is not None and len(value) > max_length:
            raise ValidationError(f"At most {max_length} characters.", field=self._field(name))
        return value

    def time(self, name, **kw):
        value = self.get(name, str, **kw)
        if value is None:
            return None
        parsed = parse_datetime(value)
        if parsed is None or parsed.tzinfo is None:
            raise ValidationError("Must be an RFC 3339 time with a zone.", field=self._field(name))
        return parsed

    def uuid(self, name, **kw):
        value = self.get(name, str, **kw)
        if value is None:
            return None
        try:
            return str(uuid.UUID(value))
        except ValueError:
            raise ValidationError("Must be a UUID.", field=self._field(name)) from None

    def choice(self, name, choices, **kw):
        value = self.get(name, str, **kw)
        if value is not None and value not in choices:
            raise ValidationError(f"Must be one of {', '.join(choices)}.", field=self._field(name))
        return value

    def rows(self, name):
        value = self.get(name, list, required=False, default=[])
        return [_Reader(item, f"{self._field(name)}.{i}") for i, item in enumerate(value)]


def _conflict(what: str, ident) -> ImportConflict:
    return ImportConflict(f"{what} {ident} exists with other content; nothing was imported.")


@transaction.atomic
def user_import(*, data) -> tuple[User, dict]:
    """Import a snapshot (SPEC §9). Returns the user and counts of created and skipped rows."""
    root = _Reader(data, "")
    if root.get("format", str) != FORMAT:
        raise ValidationError(f"Expected format {FORMAT!r}.", field="format")
    u = _Reader(root.get("user", dict), "user")
    ref = u.text("ref", max_length=150)
    counts = {"created": 0, "skipped": 0}

    def created(n=1):
        counts["created"] += n

    def skipped(n=1):
        counts["skipped"] += n

    # Keys first: a cardinality that differs is a conflict (§9).
    for k in root.rows("keys"):
        key = k.text("key", max_length=120)
        if not valid_key(key):
            raise ValidationError("Not a valid key.", field=f"{k.path}.key")
        cardinality = k.choice("cardinality", CARDINALITIES)
        label = k.text("label", max_length=200)
        existing = KeyDefinition.objects.filter(key=key).first()
        if existing is None:
            KeyDefinition.objects.create(key=key, cardinality=cardinality, label=label)
            created()
        elif existing.cardinality != cardinality:
            raise ImportConflict(f"Key {key!r} has cardinality {existing.cardinality} here, {cardinality} in the snapshot.")
        else:
            skipped()

    # The user: recreated if needed; the secret keyed value hashes (F1) must carry over.
    user = User.objects.filter(username=ref).first()
    secret = u.text("secret", null=True, required=False, max_length=64)
    # The user's page time zone (an optional field; null: the service's zone).
    from memory.domain import known_time_zones

    time_zone = u.text("time_zone", null=True, required=False, max_length=64)
    if time_zone is not None and time_zone not in known_time_zones():
        raise ValidationError("Must be an IANA time zone name, or null.", field="user.time_zone")
    if user is None:
        user = User(username=ref, email=u.text("email", required=False, default="", max_length=254) or "",
                    first_name=u.text("first_name", required=False, default="", max_length=150) or "",
                    last_name=u.text("last_name", required=False, default="", max_length=150) or "")
        joined = u.time("date_joined", required=False, null=True)
        if joined:
            user.date_joined = joined
        user.set_unusable_password()
        user.save()
        created()
    profile = MemoryProfile.objects.select_for_update().filter(user=user).first()
    if secret:
        try:
            bytes.fromhex(secret)
        except ValueError:
            raise ValidationError("Must be hex.", field="user.secret") from None
        if profile is None:
            MemoryProfile.objects.create(user=user, secret=secret)
        elif profile.secret != secret:
            hashed = (Tombstone.objects.filter(user=user, value_hash__isnull=False).exists()
                      or SlotRetraction.objects.filter(user=user).exclude(value_hash="").exists()
                      or IdempotencyRecord.objects.filter(user=user).exists())
            if hashed:
                raise ImportConflict("The user's value-hash secret differs from the snapshot's.")
            profile.secret = secret
            profile.save(update_fields=["secret"])
    elif profile is None:
        MemoryProfile.objects.create(user=user)
    # The time zone of the pages: the snapshot's, unless this user already chose one here.
    if time_zone:
        MemoryProfile.objects.filter(user=user, time_zone="").update(time_zone=time_zone)

    # Characters are catalog rows: created when missing, never overwritten.
    characters = {c.slug: c for c in Character.objects.all()}
    for c in root.rows("characters"):
        slug = c.text("slug", max_length=100)
        if slug not in characters:
            characters[slug] = Character.objects.create(
                slug=slug, name=c.text("name", max_length=200), created_at=c.time("created_at", required=False, null=True) or db_now())
            created()
        else:
            skipped()

    def character(slug, field):
        if slug is None:
            return None
        if slug not in characters:
            raise ValidationError(f"Unknown character {slug!r}.", field=field)
        return characters[slug]

    slugs = {c.pk: c.slug for c in characters.values()}

    # Conversations, messages, turns.
    for c in root.rows("conversations"):
        row = {"id": c.uuid("id"), "character": c.text("character"), "title": c.text("title", required=False, default="", max_length=200),
               "created_at": c.time("created_at"), "last_seq": c.get("last_seq", int, required=False, default=0)}
        incoming = {**row, "created_at": _t(row["created_at"])}
        ch = character(row["character"], f"{c.path}.character")
        _merge_row(Conversation, row["id"], user, incoming, lambda e: _conversation(e, slugs), "conversation",
                   lambda row=row, ch=ch: Conversation.objects.create(id=row["id"], user=user, character=ch, title=row["title"],
                                                       created_at=row["created_at"], last_seq=row["last_seq"]), counts)
    conversations = set(Conversation.objects.filter(user=user).values_list("id", flat=True))
    conversations = {str(c) for c in conversations}

    def own_conversation(value, field):
        if value is not None and value not in conversations:
            raise ValidationError("Unknown conversation of this user.", field=field)
        return value

    for m in root.rows("messages"):
        row = {"id": m.uuid("id"), "conversation": own_conversation(m.uuid("conversation"), f"{m.path}.conversation"),
               "seq": m.get("seq", int), "role": m.choice("role", ("user", "assistant", "system")),
               "content": m.text("content", max_length=10_000_000), "created_at": m.time("created_at")}
        incoming = {**row, "created_at": _t(row["created_at"])}
        _merge_row(Message, row["id"], user, incoming, _message, "message",
                   lambda row=row: Message.objects.create(id=row["id"], user=user, conversation_id=row["conversation"], seq=row["seq"],
                                                  role=row["role"], content=row["content"], created_at=row["created_at"]), counts)
    for c in Conversation.objects.filter(user=user):
        top = Message.objects.filter(conversation=c).order_by("-seq").values_list("seq", flat=True).first() or 0
        if top > c.last_seq:
            Conversation.objects.filter(pk=c.pk).update(last_seq=top)
    messages = {str(i) for i in Message.objects.filter(user=user).values_list("id", flat=True)}

    def own_message(value, field):
        if value is not None and value not in messages:
            raise ValidationError("Unknown message of this user.", field=field)
        return value

    for t in root.rows("turns"):
        row = {"id": t.uuid("id"), "conversation": own_conversation(t.uuid("conversation"), f"{t.path}.conversation"),
               "turn_key": t.text("turn_key", max_length=255), "scene": t.text("scene", null=True, required=False, max_length=100),
               "status": t.choice("status", ("open", "replied")), "user_message": own_message(t.uuid("user_message"), f"{t.path}.user_message"),
               "reply_message": own_message(t.uuid("reply_message", null=True, required=False), f"{t.path}.reply_message"),
               "created_at": t.time("created_at"), "extracted": t.get("extracted", list, required=False, default=[]),
               "plan_snapshot": t.get("plan_snapshot", dict, null=True, required=False),
               "plan_hash": t.text("plan_hash", required=False, default="", max_length=64)}
        incoming = {**row, "created_at": _t(row["created_at"])}
        # The plan snapshot is bookkeeping (the last plan asked for), not the turn's content.
        incoming.pop("plan_snapshot"), incoming.pop("plan_hash")
        _merge_row(Turn, row["id"], user, incoming, _turn_content, "turn",
                   lambda row=row: Turn.objects.create(id=row["id"], user=user, conversation_id=row["conversation"], turn_key=row["turn_key"],
                                               scene=row["scene"], status=row["status"], user_message_id=row["user_message"],
                                               reply_message_id=row["reply_message"], created_at=row["created_at"],
                                               extracted=row["extracted"], plan_snapshot=row["plan_snapshot"], plan_hash=row["plan_hash"]), counts)

    # Memories: rows first, edges after (an edge may point at a row later in the list).
    edges = []
    imported_memories = []
    sources_of: dict = {}
    for source in MemorySource.objects.filter(memory__user=user).values_list("memory_id", "message_id"):
        sources_of.setdefault(source[0], []).append(str(source[1]))
    for r in root.rows("memories"):
        s = _Reader(r.get("scope", dict), f"{r.path}.scope")
        kind = s.choice("kind", SCOPE_KINDS)
        row = {
            "id": r.uuid("id"), "key": r.text("key", max_length=120), "value": r.text("value", max_length=2000),
            "scope": {"kind": kind, "character": s.text("character", null=True, required=False),
                      "conversation": own_conversation(s.uuid("conversation", null=True, required=False), f"{s.path}.conversation"),
                      "scene": s.text("scene", null=True, required=False, max_length=100)},
            "status": r.choice("status", STATUSES), "status_since": r.time("status_since", null=True, required=False),
            "authority": r.choice("authority", AUTHORITIES), "confidence": r.get("confidence", (int, float)),
            "valid_from": r.time("valid_from"), "valid_until": r.time("valid_until", null=True, required=False),
            "retracted_at": r.time("retracted_at", null=True, required=False), "recorded_at": r.time("recorded_at"),
            "evidence_time": r.time("evidence_time"),
            "sources": sorted(own_message(m, f"{r.path}.sources") for m in r.get("sources", list, required=False, default=[])),
            "supersedes": r.uuid("supersedes", null=True, required=False), "version": r.get("version", int),
        }
        if not valid_key(row["key"]):
            raise ValidationError("Not a valid key.", field=f"{r.path}.key")
        if not (0 <= row["confidence"] <= 1):
            raise ValidationError("Must be between 0 and 1.", field=f"{r.path}.confidence")
        scope = row["scope"]
        ch = character(scope["character"], f"{s.path}.character") if kind == "character" else None
        scope_id = {"user": f"user:{user.username}", "character": f"character:{user.username}:{scope['character']}",
                    "conversation": f"conversation:{scope['conversation']}",
                    "scene": f"scene:{scope['conversation']}:{scope['scene']}"}[kind]
        incoming = {**row, **{k: _t(row[k]) for k in ("status_since", "valid_from", "valid_until", "retracted_at", "recorded_at", "evidence_time")}}
        incoming["confidence"] = float(row["confidence"])
        existing = MemoryRecord.objects.filter(pk=row["id"]).first()
        if existing is not None:
            if existing.user_id != user.pk:
                raise _conflict("memory", row["id"])
            mine = _memory(existing, slugs, sources_of)
            if existing.status == "forgotten":
                # A tombstone purged it here (F3): the skeleton is the same row.
                for field in ("value", "status", "status_since", "sources"):
                    mine.pop(field)
                    incoming.pop(field)
            if mine != incoming:
                raise _conflict("memory", row["id"])
            skipped()
            continue
        try:
            with transaction.atomic():
                MemoryRecord.objects.create(
                    id=row["id"], user=user, key=row["key"], value=row["value"], scope_kind=kind, scope_id=scope_id,
                    character=ch, conversation_id=scope["conversation"] if kind in ("conversation", "scene") else None,
                    scene=scope["scene"] if kind == "scene" else None, status=row["status"], status_since=row["status_since"],
                    authority=row["authority"], confidence=float(row["confidence"]), valid_from=row["valid_from"],
                    valid_until=row["valid_until"], recorded_at=row["recorded_at"], evidence_time=row["evidence_time"],
                    retracted_at=row["retracted_at"], version=row["version"],
                )
        except Exception as exc:  # a constraint the snapshot breaks: bad input, not a crash
            raise ValidationError(f"This memory breaks a storage rule ({type(exc).__name__}).", field=r.path) from None
        MemorySource.objects.bulk_create([MemorySource(memory_id=row["id"], message_id=m) for m in row["sources"]])
        created()
        imported_memories.append(row["id"])
        if row["supersedes"]:
            edges.append((row["id"], row["supersedes"], r.path))
    for record_id, target, path in edges:
        if not MemoryRecord.objects.filter(pk=target, user=user).exists():
            raise ValidationError("supersedes names no memory of this user.", field=f"{path}.supersedes")
        MemoryRecord.objects.filter(pk=record_id).update(supersedes_id=target)

    # Tombstones, retractions and idempotency records.
    for t in root.rows("tombstones"):
        row = {"id": t.uuid("id"), "scope": t.text("scope", max_length=255), "key": t.text("key", max_length=120),
               "value_hash": t.text("value_hash", null=True, required=False, max_length=64),
               "forgotten_at": t.time("forgotten_at"), "blocks_sources_before": t.time("blocks_sources_before"),
               "forgotten_by": t.choice("forgotten_by", FORGOTTEN_BY, required=False, default="user")}
        incoming = {**row, "forgotten_at": _t(row["forgotten_at"]), "blocks_sources_before": _t(row["blocks_sources_before"])}
        _merge_row(Tombstone, row["id"], user, incoming, _tombstone, "tombstone",
                   lambda row=row: Tombstone.objects.create(id=row["id"], user=user, scope_id=row["scope"], key=row["key"],
                                                    value_hash=row["value_hash"], forgotten_at=row["forgotten_at"],
                                                    blocks_sources_before=row["blocks_sources_before"],
                                                    forgotten_by=row["forgotten_by"]), counts)
    have = {tuple(_retraction(r).values()) for r in SlotRetraction.objects.filter(user=user)}
    for r in root.rows("retractions"):
        row = {"scope": r.text("scope", max_length=255), "key": r.text("key", max_length=120),
               "value_hash": r.text("value_hash", required=False, default="", max_length=64), "retracted_at": r.time("retracted_at")}
        ident = (row["scope"], row["key"], row["value_hash"], _t(row["retracted_at"]))
        if ident in have:
            skipped()
            continue
        SlotRetraction.objects.create(user=user, scope_id=row["scope"], key=row["key"], value_hash=row["value_hash"],
                                      retracted_at=row["retracted_at"])
        have.add(ident)
        created()
    for i in root.rows("idempotency"):
        key = i.text("key", max_length=255)
        row = {"key": key, "payload_hmac": i.text("payload_hmac", max_length=64), "outcome": i.text("outcome", max_length=10),
               "reason": i.text("reason", required=False, default="", max_length=40),
               "record": i.uuid("record", null=True, required=False), "created_at": i.time("created_at")}
        existing = IdempotencyRecord.objects.filter(user=user, key=key).first()
        if existing is not None:
            if _idempotency(existing) != {**row, "created_at": _t(row["created_at"])}:
                raise _conflict("idempotency key", key)
            skipped()
            continue
        IdempotencyRecord.objects.create(user=user, key=key, payload_hmac=row["payload_hmac"], outcome=row["outcome"],
                                         reason=row["reason"], record_id=row["record"], created_at=row["created_at"])
        created()

    _import_policy(root, user, character, own_conversation, slugs, counts)

    # F3: existing tombstones apply to what was imported.
    if imported_memories:
        from memory.selectors import tombstones_of
        from memory.services import _purge

        tombstones = tombstones_of(user)
        if tombstones:
            _purge(user, tombstones, MemoryProfile.objects.get(user=user).secret_bytes())
    return user, counts


def _merge_row(model, pk, user, incoming: dict, as_dict, what: str, build, counts: dict) -> None:
    existing = model.objects.filter(pk=pk).first()
    if existing is None:
        try:
            with transaction.atomic():
                build()
        except Exception as exc:  # a constraint the snapshot breaks: bad input, not a crash
            raise ValidationError(f"This {what} breaks a storage rule ({type(exc).__name__}).", field=f"{what}:{pk}") from None
        counts["created"] += 1
        return
    if getattr(existing, "user_id", None) != user.pk or as_dict(existing) != incoming:
        raise _conflict(what, pk)
    counts["skipped"] += 1


def _import_policy(root: _Reader, user, character, own_conversation, slugs, counts) -> None:
    from policy.models import Capability

    capabilities = set(Capability.objects.values_list("name", flat=True))

    def capability(value, field):
        if value not in capabilities:
            raise ValidationError(f"Unknown capability {value!r}.", field=field)
        return value

    edges = []
    for r in root.rows("policy_rules"):
        s = _Reader(r.get("scope", dict), f"{r.path}.scope")
        kind = s.choice("kind", ("global", "character", "conversation", "scene"))
        row = {
            "id": r.uuid("id"), "capability": capability(r.text("capability"), f"{r.path}.capability"),
            "effect": r.choice("effect", ("allow", "deny", "ask")),
            "source": r.choice("source", ("confirmed-inference", "explicit-user")),
            "scope": {"kind": kind, "character": s.text("character", null=True, required=False),
                      "conversation": own_conversation(s.uuid("conversation", null=True, required=False), f"{s.path}.conversation"),
                      "scene": s.text("scene", null=True, required=False, max_length=100)},
            "requested_by": r.choice("requested_by", ("user", "assistant", "automation"), null=True, required=False),
            "valid_from": r.time("valid_from"), "valid_until": r.time("valid_until", null=True, required=False),
            "revoked_at": r.time("revoked_at", null=True, required=False), "version": r.get("version", int),
            "supersedes": r.uuid("supersedes", null=True, required=False), "created_at": r.time("created_at"),
        }
        scope = row["scope"]
        ch = character(scope["character"], f"{s.path}.character") if kind == "character" else None
        incoming = {**row, **{k: _t(row[k]) for k in ("valid_from", "valid_until", "revoked_at", "created_at")}}
        incoming["supersedes"] = row["supersedes"]

        def build(row=row, ch=ch, kind=kind, scope=scope):
            PolicyRule.objects.create(
                id=row["id"], user=user, capability_id=row["capability"], effect=row["effect"], source=row["source"],
                scope_kind=kind, character=ch,
                conversation_id=scope["conversation"] if kind in ("conversation", "scene") else None,
                scene=scope["scene"] if kind == "scene" else None, requested_by=row["requested_by"],
                valid_from=row["valid_from"], valid_until=row["valid_until"], revoked_at=row["revoked_at"],
                version=row["version"], created_at=row["created_at"],
            )
            if row["supersedes"]:
                edges.append((row["id"], row["supersedes"]))

        existing = PolicyRule.objects.filter(pk=row["id"]).first()
        if existing is not None and existing.supersedes_id is None and row["supersedes"]:
            incoming["supersedes"] = None  # the edge is restored below on a fresh import only
        _merge_row(PolicyRule, row["id"], user, incoming, lambda e: _rule(e, slugs), "policy rule", build, counts)
    for rule_id, target in edges:
        if PolicyRule.objects.filter(pk=target, user=user).exists():
            PolicyRule.objects.filter(pk=rule_id).update(supersedes_id=target)

    v = _Reader(root.get("policy_version", dict, required=False, default={"user": 0}), "policy_version")
    wanted = v.get("user", int, required=False, default=0)
    row, _ = UserPolicyVersion.objects.select_for_update().get_or_create(user=user)
    if wanted > row.version:  # D7: versions only increase
        row.version = wanted
        row.save(update_fields=["version"])

    for d in root.rows("decisions"):
        row = {"id": d.uuid("id"), "capability": d.text("capability", max_length=100),
               "requested_by": d.choice("requested_by", ("user", "assistant", "automation")),
               "effect": d.choice("effect", ("allow", "deny", "ask")), "reason": d.text("reason", max_length=30),
               "rule_ids": d.get("rule_ids", list, required=False, default=[]),
               "defaults_version": d.get("defaults_version", int), "user_version": d.get("user_version", int),
               "scope_ids": d.get("scope_ids", list, required=False, default=[]), "decided_at": d.time("decided_at")}
        incoming = {**row, "decided_at": _t(row["decided_at"])}
        _merge_row(DecisionLog, row["id"], user, incoming, _decision, "decision",
                   lambda row=row: DecisionLog.objects.create(user=user, **{k: v for k, v in row.items()}), counts)
    for j in root.rows("media_jobs"):
        row = {"id": j.uuid("id"), "capability": capability(j.text("capability"), f"{j.path}.capability"),
               "character": j.text("character", null=True, required=False),
               "conversation": own_conversation(j.uuid("conversation", null=True, required=False), f"{j.path}.conversation"),
               "decision_id": j.uuid("decision_id"), "start_decision_id": j.uuid("start_decision_id", null=True, required=False),
               "created_at": j.time("created_at"), "started_at": j.time("started_at", null=True, required=False),
               "finished_at": j.time("finished_at", null=True, required=False)}
        for f in JOB_FIELDS:
            row[f] = j.get(f, (str, int, bool, list), null=True, required=False)
        ch = character(row["character"], f"{j.path}.character")
        incoming = {**row, **{k: _t(row[k]) for k in ("created_at", "started_at", "finished_at")}}

        def build(row=row, ch=ch):
            fields = {f: row[f] for f in JOB_FIELDS}
            MediaJob.objects.create(id=row["id"], user=user, capability_id=row["capability"], character=ch,
                                    conversation_id=row["conversation"], decision_id=row["decision_id"],
                                    start_decision_id=row["start_decision_id"], created_at=row["created_at"],
                                    started_at=row["started_at"], finished_at=row["finished_at"], **fields)

        _merge_row(MediaJob, row["id"], user, incoming, lambda e: _job(e, slugs), "media job", build, counts)
    for a in root.rows("answers"):
        row = {"id": a.uuid("id"), "decision": a.uuid("decision"), "answer": a.choice("answer", ("allow", "deny")),
               "remember": a.choice("remember", ("once", "scene", "conversation", "character", "global")),
               "rule": a.uuid("rule", null=True, required=False), "media_job": a.uuid("media_job", null=True, required=False),
               "answered_at": a.time("answered_at")}
        incoming = {**row, "answered_at": _t(row["answered_at"])}
        if not DecisionLog.objects.filter(pk=row["decision"], user=user).exists():
            raise ValidationError("Unknown decision of this user.", field=f"{a.path}.decision")
        _merge_row(PolicyAnswer, row["id"], user, incoming, _answer, "answer",
                   lambda row=row: PolicyAnswer.objects.create(
                       id=row["id"], user=user, decision_id=row["decision"], answer=row["answer"], remember=row["remember"],
                       rule_id=row["rule"], media_job_id=row["media_job"], answered_at=row["answered_at"]), counts)
