"""Explain, for support's "why did it say that" (SPEC §13): the resolver and the projection
(`ContextResolution`) and the pure policy engine (`engine.explain`) run for a context, with
every reason also in words (`support.words`, naming who acted from the support-action log). It
writes nothing: unlike `decision_make`, it adds no decision-log rows (D10 logs decisions the
runtime acted on, not a support look-up)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from config.errors import ValidationError
from conversations.selectors import load_context
from memory.models import MemoryRecord
from memory.selectors.resolution import ContextResolution
from policy import engine
from policy.domain import DecisionRequest, PolicyContext
from policy.selectors import capabilities_by_name, policy_version_of, rules_for_explain

from .. import words
from ..display import page_label
from ..models import SupportAction

EXPLAIN_PERMISSION = "support.use_explain"


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

    request_context = PolicyContext.of(ctx.domain)
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
