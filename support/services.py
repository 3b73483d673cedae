"""What support staff do, as services: the support actions, the access log and the explain
service, kept out of the admin classes so they can be tested and reused (a management command,
a future support API) without a request.

- **Private text** (memory values, message content, conversation titles, a key's free part)
  is shown only inside a reveal (`support.reveals`, SPEC §13 S1), and each page that shows it
  is logged there.
- **Support actions** call the owning services — `memory_forget`, `memory_retract`,
  `memory_normalise`, `rule_revoke` — never the models, and write one `SupportAction` row per
  object with the reason the staff member gave (required). That table is the one place the
  reasons are kept; `detail` holds ids and counts only.
- **Explain** runs the resolver and the projection (`ContextResolution`) and the pure policy
  engine (`engine.explain`) for a context, with every reason also in words (`support.words`,
  naming who acted from the support-action log). It writes nothing: unlike `decision_make`, it
  does not add decision-log rows (D10 logs decisions the runtime acted on, not a support
  look-up). `turn_plan` reads a turn's stored plan (SPEC §7) back into rows for the admin.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Q

from config.clock import db_now
from config.errors import DomainError, ValidationError
from conversations.models import Message
from conversations.plan_snapshot import PlanSnapshot
from conversations.selectors import load_context
from memory.forgetting import memory_forget
from memory.models import MemoryRecord
from memory.selectors.records import registry
from memory.selectors.resolution import ContextResolution
from memory.services import memory_normalise, memory_retract
from policy import engine
from policy.domain import DecisionRequest
from policy.models import DecisionLog, PolicyRule
from policy.selectors import capabilities_by_name, policy_version_of, rules_for_explain
from policy.services import policy_context, rule_revoke

from . import words
from .display import has_free_part, page_label
from .models import SupportAction
from .reveals import PRIVATE_TEXT_PERMISSION

EXPLAIN_PERMISSION = "support.use_explain"
ACTION_PERMISSIONS = {
    "forget": "support.forget_memory",
    "retract": "support.retract_memory",
    "normalise": "support.normalise_memory",
    "revoke-rule": "support.revoke_rule",
}
REASON_MAX = 1000

SUPPORT_GROUP = "Support"
# What the "Support" group holds (support/migrations/0002_support_group.py seeded the same list;
# a test keeps them in step). View permissions for answering tickets, the explain view and the
# four actions; not `view_private_text`, which is granted person by person.
SUPPORT_GROUP_PERMISSIONS = (
    ("auth", "view_user"),
    ("memory", "view_memoryrecord"),
    ("memory", "view_memoryprofile"),
    ("memory", "view_keydefinition"),
    ("memory", "view_tombstone"),
    ("memory", "view_slotretraction"),
    ("memory", "view_idempotencyrecord"),
    ("policy", "view_policyrule"),
    ("policy", "view_capability"),
    ("policy", "view_userpolicyversion"),
    ("policy", "view_defaultspolicyversion"),
    ("policy", "view_decisionlog"),
    ("policy", "view_policyanswer"),
    ("policy", "view_mediajob"),
    ("conversations", "view_character"),
    ("conversations", "view_conversation"),
    ("conversations", "view_turn"),
    ("conversations", "view_message"),
    ("support", "view_supportaction"),
    ("support", "use_explain"),
    ("support", "forget_memory"),
    ("support", "retract_memory"),
    ("support", "normalise_memory"),
    ("support", "revoke_rule"),
)


# ---------------------------------------------------------------------------------------------
# Support actions


def clean_reason(reason) -> str:
    text = (reason or "").strip() if isinstance(reason, str) or reason is None else ""
    if not text:
        raise ValidationError(
            "Say why (a ticket number and what the user asked for).", field="reason"
        )
    if len(text) > REASON_MAX:
        raise ValidationError(f"At most {REASON_MAX} characters.", field="reason")
    return text


@dataclass
class ActionOutcome:
    object_id: str
    outcome: str  # "done", or a stable code for why nothing changed
    detail: dict = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.outcome == "done"


def _log_action(
    *, staff, action: str, model, object_id, subject_id, reason: str, outcome: ActionOutcome
) -> None:
    SupportAction.objects.create(
        staff_id=staff.pk,
        staff_username=staff.get_username(),
        subject_id=subject_id,
        action=action,
        content_type=ContentType.objects.get_for_model(model),
        object_id=str(object_id),
        reason=reason,
        outcome=outcome.outcome,
        detail=outcome.detail,
        acted_at=db_now(),
    )


def _uuids(ids: Iterable) -> list[uuid.UUID]:
    """Ids as UUIDs (they come as strings from a form, as UUIDs from a queryset); an id that is
    not a UUID cannot name a row and is dropped."""
    out = []
    for value in ids:
        try:
            out.append(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
        except ValueError:
            continue
    return list(dict.fromkeys(out))


def _each(
    *, staff, action: str, model, reason: str, targets: Sequence[tuple[object, int | None]], run
) -> list[ActionOutcome]:
    """Run `run(object_id)` for each target in its own transaction together with its log row:
    a refusal by the service (a DomainError) is logged as the outcome and changes nothing."""
    reason = clean_reason(reason)
    outcomes = []
    for object_id, subject_id in targets:
        with transaction.atomic():
            try:
                outcome = run(object_id)
            except DomainError as error:
                outcome = ActionOutcome(str(object_id), error.code, {"detail": error.detail})
            _log_action(
                staff=staff,
                action=action,
                model=model,
                object_id=object_id,
                subject_id=subject_id,
                reason=reason,
                outcome=outcome,
            )
        outcomes.append(outcome)
    return outcomes


def support_forget(
    *, staff, record_ids: Sequence, reason: str, everywhere: bool = False, whole_key: bool = False
) -> list[ActionOutcome]:
    """F1/F2 on the user's behalf, through `memory_forget`: a tombstone (never the value), the
    covered records purged to skeletons. A record already forgotten (for instance by the forget
    of another selected record of its slot) is skipped and says so."""

    record_ids = _uuids(record_ids)
    owners = dict(MemoryRecord.objects.filter(pk__in=record_ids).values_list("pk", "user_id"))

    def run(record_id):
        owner = get_user_model().objects.get(pk=owners[record_id])
        tombstone = memory_forget(
            record_id=record_id,
            user=owner,
            everywhere=everywhere,
            whole_key=whole_key,
            by="support",
        )
        purged = MemoryRecord.objects.filter(
            user=owner, key=tombstone.key, status="forgotten", status_since=tombstone.forgotten_at
        ).values_list("pk", flat=True)
        return ActionOutcome(
            str(record_id),
            "done",
            {
                "tombstone": str(tombstone.pk),
                "scope": tombstone.scope_id,
                "key": tombstone.key,
                "value_level": tombstone.value_hash is not None,
                "forgotten_at": tombstone.forgotten_at.isoformat(),
                "records": sorted(str(pk) for pk in purged),
                # F6: how many messages the forget withholds (a count only, S1).
                "withheld_messages": tombstone.withheld_messages,
            },
        )

    return _each(
        staff=staff,
        action="forget",
        model=MemoryRecord,
        reason=reason,
        targets=[(pk, owners[pk]) for pk in record_ids if pk in owners],
        run=run,
    )


def support_retract(*, staff, record_ids: Sequence, reason: str) -> list[ActionOutcome]:
    """W10 through `memory_retract`: the record's slot is closed now and stays closed for old
    evidence (W4)."""

    record_ids = _uuids(record_ids)
    owners = dict(MemoryRecord.objects.filter(pk__in=record_ids).values_list("pk", "user_id"))

    def run(record_id):
        result = memory_retract(record_id=record_id)
        return ActionOutcome(
            str(record_id),
            "done",
            {
                "retracted_at": result.retracted_at.isoformat(),
                "closed": [r.id for r in result.records],
            },
        )

    return _each(
        staff=staff,
        action="retract",
        model=MemoryRecord,
        reason=reason,
        targets=[(pk, owners[pk]) for pk in record_ids if pk in owners],
        run=run,
    )


def support_normalise(*, staff, user_ids: Sequence[int], reason: str) -> list[ActionOutcome]:
    """W12 through `memory_normalise`, per user: idempotent and safe at any time (the
    `normalise_statuses` management command runs the same service for everyone)."""

    User = get_user_model()
    user_ids = list(dict.fromkeys(int(pk) for pk in user_ids))
    users = {u.pk: u for u in User.objects.filter(pk__in=user_ids)}

    def run(user_id):
        changed = memory_normalise(user=users[user_id])
        return ActionOutcome(str(user_id), "done", {"changed": changed})

    return _each(
        staff=staff,
        action="normalise",
        model=User,
        reason=reason,
        targets=[(pk, pk) for pk in user_ids if pk in users],
        run=run,
    )


def support_rule_revoke(*, staff, rule_ids: Sequence, reason: str) -> list[ActionOutcome]:
    """D5/D7 through `rule_revoke`: revoked now, the owner's policy version bumped in the same
    transaction. A product default (no user) affects every user; a revoked rule is skipped."""

    rule_ids = _uuids(rule_ids)
    rows = {
        pk: (user_id, revoked)
        for pk, user_id, revoked in PolicyRule.objects.filter(pk__in=rule_ids).values_list(
            "pk", "user_id", "revoked_at"
        )
    }

    def run(rule_id):
        if rows[rule_id][1] is not None:
            return ActionOutcome(str(rule_id), "already-revoked", {})
        rule = rule_revoke(rule_id=rule_id)
        return ActionOutcome(
            str(rule_id),
            "done",
            {
                "revoked_at": rule.revoked_at.isoformat(),
                "product_default": rule.user_id is None,
                "policy_version_after": rule.policy_version_after,
            },
        )

    return _each(
        staff=staff,
        action="revoke-rule",
        model=PolicyRule,
        reason=reason,
        targets=[(pk, rows[pk][0]) for pk in rule_ids if pk in rows],
        run=run,
    )


# ---------------------------------------------------------------------------------------------
# Explain


@dataclass
class RecordExplained:
    """One candidate record: what the resolver (R1–R6, R8) and the projection (P1–P3) said,
    as codes and in words (`support.words`). `record.value` is private: the caller decides
    whether to show it."""

    record: object  # memory.domain.MemoryRecord
    step: str
    reason: str
    detail: str
    prompt: str  # certainty when projected, the P-reason when left out, "" when not active
    words: str = ""  # the resolver's reason in a sentence
    prompt_words: str = ""
    label: str = ""  # the key's label (the registry's, or one made from the key)


@dataclass
class CapabilityExplained:
    capability: str
    effect: str
    reason: str
    rule_ids: tuple[str, ...]
    rules: list[dict]  # {"id", "reason", "detail", "words", "effect", "source", "scope", "user"}
    words: str = ""  # the decision's reason in words


@dataclass
class ExplainResult:
    context: object  # LoadedContext
    records: list[RecordExplained]
    counts: dict
    prompt_counts: dict
    trace: dict
    policy_version: dict
    capabilities: list[CapabilityExplained]

    @property
    def active(self) -> list[RecordExplained]:
        return [r for r in self.records if r.step == "active"]

    @property
    def excluded(self) -> list[RecordExplained]:
        return [r for r in self.records if r.step != "active"]


def support_actors(user) -> words.Actors:
    """What support did for `user` (forgets, retractions, rule revocations that were done), so
    reasons can say who acted. One query."""
    rows = SupportAction.objects.filter(
        subject=user,
        outcome="done",
        action__in=("forget", "retract", "revoke-rule"),
    ).values_list("action", "object_id", "detail")
    return words.Actors.from_log(rows)


def support_explain(
    *,
    user: str,
    character: str | None = None,
    conversation: str | None = None,
    scene: str | None = None,
    now: datetime | None = None,
    capabilities: Sequence[str] = (),
    requested_by: str = "assistant",
    keys: Sequence[str] | None = None,
    memory=None,
) -> ExplainResult:
    """The resolver's and the policy engine's view of one context, for support. Raises
    `ValidationError` (fields named `context.*`) for a context that does not load. `memory`
    (a record id of the user) limits it to that record's key: links name a record, never a key,
    whose free part is private text (S1)."""

    ctx = load_context(
        {
            "user": user,
            "character": character or None,
            "conversation": conversation or None,
            "scene": scene or None,
            "now": now,
        }
    )
    if memory:
        key = (
            MemoryRecord.objects.filter(user=ctx.user, pk=memory)
            .values_list("key", flat=True)
            .first()
        )
        if key is None:
            raise ValidationError("Not a memory of this user.", field="memory")
        keys = [key]
    resolved = ContextResolution(ctx, list(keys) if keys else None)
    resolution, projection = resolved.resolution, resolved.projection
    projected = {p.record.id: p.certainty for p in projection.prompt}
    left_out = {e.id: e.reason for e in projection.excluded}
    actors = support_actors(ctx.user)
    candidates = {record.id: record for record in resolved.records}
    tombstones = {t.id: (t.forgotten_at, t.scope_id) for t in resolved.tombstones}
    records = []
    for record in sorted(resolved.records, key=lambda r: (r.key, r.scope_id, r.version, r.id)):
        why = resolution.explain(record.id)
        if why is None:  # duplicate ids collapse in the resolver; every id has one explanation
            continue
        prompt = projected.get(record.id) or left_out.get(record.id, "")
        records.append(
            RecordExplained(
                record,
                why.step,
                why.reason,
                why.detail,
                prompt,
                words=words.record_words(
                    step=why.step,
                    reason=why.reason,
                    detail=why.detail,
                    record=record,
                    records=candidates,
                    tombstones=tombstones,
                    actors=actors,
                    now=ctx.domain.now,
                ),
                prompt_words=words.prompt_words(prompt),
                label=page_label(resolved.registry.labels, record.key),
            )
        )
    counts: dict[str, int] = {}
    for item in resolution.excluded:
        counts[item.reason] = counts.get(item.reason, 0) + 1
    prompt_counts: dict[str, int] = {"projected": len(projection.prompt)}
    for item in projection.excluded:
        prompt_counts[item.reason] = prompt_counts.get(item.reason, 0) + 1

    request_context = policy_context(ctx)
    wanted = capabilities_by_name(capabilities) if capabilities else {}
    explained = []
    for name in wanted:
        rules = rules_for_explain(user=ctx.user, capability=name)
        by_id = {r.id: r for r in rules}
        result = engine.explain(
            DecisionRequest(capability=name, requested_by=requested_by), rules, request_context
        )
        explained.append(
            CapabilityExplained(
                capability=name,
                effect=result.decision.effect,
                reason=result.decision.reason,
                rule_ids=result.decision.rule_ids,
                words=words.decision_words(result.decision.reason),
                rules=[
                    {
                        "id": item.rule_id,
                        "reason": item.reason,
                        "detail": item.detail,
                        "words": words.rule_words(
                            reason=item.reason, rule=by_id[item.rule_id], actors=actors
                        ),
                        "effect": by_id[item.rule_id].effect,
                        "source": by_id[item.rule_id].source,
                        "scope": by_id[item.rule_id].scope.label(),
                        "user": by_id[item.rule_id].user or "(product default)",
                    }
                    for item in result.rules
                ],
            )
        )
    return ExplainResult(
        context=ctx,
        records=records,
        counts=counts,
        prompt_counts=prompt_counts,
        trace=dict(resolution.trace),
        policy_version=policy_version_of(ctx.user).as_dict(),
        capabilities=explained,
    )


# ---------------------------------------------------------------------------------------------
# A turn's prompt plan, as support reads it


@dataclass
class PlanItem:
    """One memory or message of a stored plan: ids and what they stand for, never text unless
    `value` was revealed (memories only, with `view_private_text`)."""

    kind: str  # "memory" or "message"
    id: str
    key: str = ""  # memory
    label: str = ""
    scope_id: str = ""
    authority: str = ""
    value: str | None = None  # None: not shown (masked); "" : erased since
    erased_at: datetime | None = None  # when it was forgotten (its value erased)
    gone: bool = False  # the record or message no longer exists (its conversation was deleted)
    seq: int | None = None  # message
    role: str = ""
    reason: str = ""  # left out: the planner's reason code
    words: str = ""  # left out: the reason in words


@dataclass
class TurnPlan:
    """A turn's last prompt plan (its snapshot, SPEC §7), read back for support: the memories
    and messages it gave the model, what it left out and why, and the policy decisions."""

    turn: object
    now: datetime | None
    params: dict
    estimated_tokens: int | None
    plan_hash: str
    current: PlanItem | None
    history: list[PlanItem]
    memories: list[PlanItem]
    left_out: list[PlanItem]
    decisions: list[dict]  # {"id", "capability", "effect", "reason", "words"}
    revealed: list[str]  # ids of the memories whose value is shown
    reveal: bool = False  # inside a reveal of the turn's user: values and whole keys show

    @property
    def shown(self) -> int:
        """How many memories' private text (a value, a key's free part) the plan shows."""
        if not self.reveal:
            return 0
        items = [*self.memories, *self.left_out]
        keyed = {i.id for i in items if i.kind == "memory" and has_free_part(i.key)}
        return len(keyed | set(self.revealed))

    @property
    def exists(self) -> bool:
        return bool(self.plan_hash)


def _parse_time(text) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def turn_plan_time(turn) -> datetime:
    """The time a turn's plan was made for (the snapshot's `now`), or when the turn was made."""
    snapshot = PlanSnapshot.of(turn.plan_snapshot)
    return (_parse_time(snapshot.now) if snapshot else None) or turn.created_at


def turn_plan(turn, *, reveal: bool) -> TurnPlan:
    """Read a turn's plan snapshot back into rows: four queries whatever its size (memory
    records, key labels, messages, decisions). Values only when `reveal` (inside a reveal of
    the turn's user); the caller logs the page (`shown`)."""
    snapshot = PlanSnapshot.of(turn.plan_snapshot) or PlanSnapshot()
    excluded = snapshot.excluded
    memory_ids = snapshot.memory_ids()
    message_ids = list(
        dict.fromkeys(
            [
                *([snapshot.current] if snapshot.current else []),
                *snapshot.history,
                *(i for kind, i, _ in excluded if kind == "message"),
            ]
        )
    )
    fields = [
        "id",
        "key",
        "scope_id",
        "authority",
        "status",
        "status_since",
        *(["value"] if reveal else []),
    ]
    records = (
        {
            str(row["id"]): row
            for row in MemoryRecord.objects.filter(
                user_id=turn.user_id, pk__in=_uuids(memory_ids)
            ).values(*fields)
        }
        if memory_ids
        else {}
    )
    labels = registry({row["key"] for row in records.values()}) if records else None
    messages = (
        {
            str(pk): (seq, role)
            for pk, seq, role in Message.objects.filter(
                conversation_id=turn.conversation_id, pk__in=_uuids(message_ids)
            ).values_list("pk", "seq", "role")
        }
        if message_ids
        else {}
    )
    revealed: list[str] = []

    def memory(record_id: str, reason: str = "") -> PlanItem:
        row = records.get(record_id)
        item = PlanItem("memory", record_id, reason=reason, words=words.plan_reason_words(reason))
        if row is None:
            item.gone = True
            return item
        item.key, item.scope_id, item.authority = row["key"], row["scope_id"], row["authority"]
        item.label = page_label(labels.labels, row["key"])
        if row["status"] == "forgotten":
            item.value, item.erased_at = "", row["status_since"]
        elif reveal and not reason:  # values of what the model was given; left-out rows show none
            item.value = row["value"]
            revealed.append(record_id)
        return item

    def message(message_id: str, reason: str = "") -> PlanItem:
        found = messages.get(message_id)
        item = PlanItem("message", message_id, reason=reason, words=words.plan_reason_words(reason))
        if found is None:
            item.gone = True
        else:
            item.seq, item.role = found
        return item

    decision_ids = _uuids(snapshot.decisions)
    decisions = (
        [
            {
                "id": str(pk),
                "capability": capability,
                "effect": effect,
                "reason": reason,
                "words": words.decision_words(reason),
            }
            for pk, capability, effect, reason in DecisionLog.objects.filter(
                user_id=turn.user_id, pk__in=decision_ids
            )
            .order_by("capability")
            .values_list("pk", "capability", "effect", "reason")
        ]
        if decision_ids
        else []
    )
    return TurnPlan(
        turn=turn,
        now=_parse_time(snapshot.now),
        params=dict(snapshot.params),
        estimated_tokens=snapshot.estimated_tokens,
        plan_hash=turn.plan_hash or "",
        current=message(snapshot.current) if snapshot.current else None,
        history=[message(i) for i in snapshot.history],
        memories=[memory(i) for i in snapshot.memories],
        left_out=[
            memory(i, reason) if kind == "memory" else message(i, reason)
            for kind, i, reason in excluded
        ],
        decisions=decisions,
        revealed=revealed,
        reveal=reveal,
    )


# ---------------------------------------------------------------------------------------------
# The Support group


def support_staff_put(*, username: str, password: str, private_text: bool = False):
    """A support staff member: a staff account (not a superuser) in the Support group, with
    `view_private_text` only when asked for. Creates the account or updates its password,
    group and that permission."""
    User = get_user_model()
    with transaction.atomic():
        user, _ = User.objects.get_or_create(username=username)
        user.is_staff, user.is_active = True, True
        user.set_password(password)
        user.save()
        user.groups.add(support_group_ensure())
        app_label, codename = PRIVATE_TEXT_PERMISSION.split(".")
        permission = Permission.objects.get(content_type__app_label=app_label, codename=codename)
        if private_text:
            user.user_permissions.add(permission)
        else:
            user.user_permissions.remove(permission)
    return user


def support_group_ensure():
    """The "Support" group with exactly `SUPPORT_GROUP_PERMISSIONS` — the one place the
    group's permissions are written. Runs after every `migrate` (`support.apps`, post_migrate),
    so a new deployment, an upgraded one and a flushed test database all end with the same
    group; a permission added by hand is taken away again. Idempotent."""
    wanted = Q(pk__in=[])
    for app_label, codename in SUPPORT_GROUP_PERMISSIONS:
        wanted |= Q(content_type__app_label=app_label, codename=codename)
    permissions = list(Permission.objects.filter(wanted))
    if len(permissions) != len(SUPPORT_GROUP_PERMISSIONS):
        raise LookupError("Some support permissions do not exist yet; run migrate first.")
    with transaction.atomic():
        group, _ = Group.objects.get_or_create(name=SUPPORT_GROUP)
        group.permissions.set(permissions)
    return group
