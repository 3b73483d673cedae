"""The support actions (SPEC §13): forget, retract, normalise and revoke a rule on a user's
behalf. Each calls the owning service — `memory_forget`, `memory_retract`, `memory_normalise`,
`rule_revoke` — never the models, and writes one `SupportAction` row per object with the
reason the staff member gave (required). That table is the one place the reasons are kept;
`detail` holds ids and counts only."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import transaction

from config.clock import db_now
from config.errors import DomainError, ValidationError
from memory.forgetting import memory_forget
from memory.models import MemoryRecord
from memory.services import memory_normalise, memory_retract
from policy.models import PolicyRule
from policy.services import rule_revoke

from ..models import SupportAction
from ..reveals import reveals_forget_user

ACTION_PERMISSIONS = {
    "forget": "support.forget_memory",
    "retract": "support.retract_memory",
    "normalise": "support.normalise_memory",
    "revoke-rule": "support.revoke_rule",
}
REASON_MAX = 1000


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


def as_uuids(ids: Iterable) -> list[uuid.UUID]:
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


def _each_record(*, staff, action: str, reason: str, record_ids: Sequence, run):
    """`_each` over the memory records `record_ids` that exist, each logged under its user:
    `run(record_id, owner_id)`."""
    record_ids = as_uuids(record_ids)
    owners = dict(MemoryRecord.objects.filter(pk__in=record_ids).values_list("pk", "user_id"))
    return _each(
        staff=staff,
        action=action,
        model=MemoryRecord,
        reason=reason,
        targets=[(pk, owners[pk]) for pk in record_ids if pk in owners],
        run=lambda record_id: run(record_id, owners[record_id]),
    )


def support_forget(
    *, staff, record_ids: Sequence, reason: str, everywhere: bool = False, whole_key: bool = False
) -> list[ActionOutcome]:
    """F1/F2 on the user's behalf, through `memory_forget`: a tombstone (never the value), the
    covered records purged to skeletons. A record already forgotten (for instance by the forget
    of another selected record of its slot) is skipped and says so."""

    def run(record_id, owner_id):
        owner = get_user_model().objects.get(pk=owner_id)
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
                # F6, F7.2: how many messages and other memories the forget withholds (counts
                # only, S1).
                "withheld_messages": tombstone.withheld_messages,
                "withheld_memories": tombstone.withheld_memories,
            },
        )

    return _each_record(staff=staff, action="forget", reason=reason, record_ids=record_ids, run=run)


def support_retract(*, staff, record_ids: Sequence, reason: str) -> list[ActionOutcome]:
    """W10 through `memory_retract`: the record's slot is closed now and stays closed for old
    evidence (W4)."""

    def run(record_id, owner_id):
        result = memory_retract(record_id=record_id)
        return ActionOutcome(
            str(record_id),
            "done",
            {
                "retracted_at": result.retracted_at.isoformat(),
                "closed": [r.id for r in result.records],
            },
        )

    return _each_record(
        staff=staff, action="retract", reason=reason, record_ids=record_ids, run=run
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

    rule_ids = as_uuids(rule_ids)
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


def support_user_erase(user) -> None:
    """SPEC §9, S2, as `conversations.services.user_delete` erases `user` (in its transaction,
    registered from `support.apps`): support's notes about them go, since a staff-written
    reason may quote them; their reveals and access log stay, the user replaced by a
    pseudonym."""
    SupportAction.objects.filter(subject_id=user.pk).delete()
    reveals_forget_user(user=user)
