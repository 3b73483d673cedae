"""The one turn path (SPEC §7 I1–I9, §8; docs/DESIGN.md "One turn path"): a new turn, a
replayed one and a stored turn's plan are one use case — read once (`read`), one pure pass
(`decide`, `turns.pipeline`), written once (`write`) — and differ only in what they may
write (`TurnAsk.creates`): a new turn stores its message, what it teaches, the turn with its
plan snapshot and the decision log; a stored turn's plan (`GET /turns/{id}/prompt-plan`, a
replayed creation, I7) stores the snapshot and the decision log alone.

The read is one statement (`turns.storage.read_turn`): the clock, the turn under the key, the
extractor's "it", the context's memory state (`memory.state.ContextMemory`), the history
before the turn's message with the text a plan can admit, and the user's rules with their
version. The pure pass decides everything from it; under `skip` a plan may admit a message
past the text read (which ones depends on the memory section the pass itself decides): its
text is then read (`needs_texts`) and the plan step made again, the one read after the pass.
The write is one statement on PostgreSQL (`config.storage.RowWriter`)."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from config import metrics
from config.storage import RowWriter, raw_reader
from conversations.domain import Context, scope_ids_of
from conversations.models import Conversation, Message, Turn
from conversations.scopes import scope_columns
from memory.current import ResolveBasis
from memory.selectors.records import Registry, catalog_registry
from memory.selectors.resolution import resolve_log_line
from memory.services import log_learned
from memory.state import ContextMemory
from policy.domain import PolicyContext, PolicyVersion
from policy.models import DecisionLog
from policy.selectors import merged_rules, product_defaults
from policy.services import DecisionOutcome, log_decision

from . import pipeline, storage
from .planner import QUERY_HISTORY, Plan, PlanMessage, PlanParams
from .selectors import message_contents, read_turn_orm
from .tokens import estimate_message

log_plans = logging.getLogger("companion.conversations")


@dataclass(frozen=True)
class TurnAsk:
    """One request of the turn path. `conversation` is loaded with its user (and the user's
    memory profile) and character; `current` is the turn's message — new (`creates`: its
    id is drawn once the read finds the key free) or stored. `turn_key` looks up a turn
    stored under it (creation only); `now` plans a stored turn at a time the caller chose
    (the GET's `now`), else the read's clock is the time."""

    conversation: Conversation
    current: PlanMessage
    scene: str | None
    plan: PlanParams | None
    capabilities: tuple[pipeline.Capability, ...]
    creates: bool
    turn_key: str | None = None
    turn_id: uuid.UUID | None = None  # a new turn's id, drawn once the key is found free
    now: datetime | None = None


@dataclass
class TurnTaken:
    """What the path read and decided, and the turn it wrote (or planned)."""

    read: pipeline.TurnRead
    decided: pipeline.TurnDecided | None
    turn: Turn | None = None
    existing: uuid.UUID | None = None  # creation: the turn already stored under the key


def take(ask: TurnAsk, *, turn: Turn | None = None) -> TurnTaken:
    """Read → decide → write. For a new turn (`creates`), a turn already stored under the key
    stops the path after the read (`existing`: the caller replays it); for a stored turn's
    plan, `turn` is that turn. Raises what the pure pass refuses (nothing is written)."""
    conversation = ask.conversation
    profile = conversation.user.memory_profile
    memory = ContextMemory(
        conversation.user,
        scope_ids_of(
            conversation.user.username, conversation.character.slug, str(conversation.pk), ask.scene
        ),
    )
    learning = profile.learn and ask.creates
    rows = read(ask, memory, learning=learning)
    if rows.existing_turn is not None:
        return TurnTaken(None, None, existing=rows.existing_turn)
    if ask.creates:
        # A new turn's ids, in the order the step-by-step path drew them: the message, then
        # the turn (then each new record and each logged decision, in the pure pass).
        message_id, turn_id = uuid.uuid4(), uuid.uuid4()
        current = dataclasses.replace(ask.current, id=str(message_id))
        ask = dataclasses.replace(ask, current=current, turn_id=turn_id)
    registry = _registry(rows, learning, ask.plan)
    turn_read = _turn_read(ask, profile, rows, memory, registry, learning=learning)
    decided = decide(ask, turn_read)
    written = write(ask, turn_read, decided, memory, registry, turn=turn)
    return TurnTaken(turn_read, decided, written)


def read(ask: TurnAsk, memory: ContextMemory, *, learning: bool) -> storage.TurnRows:
    """`turns.storage.read_turn`, or its ORM reference (`read_turn_orm`) where the raw reader
    does not serve the database. The history's text is read for what a plan could admit
    beside the message: its budget less the message's estimate (I3)."""
    plan = ask.plan
    conversation = ask.conversation
    room = plan.budget - estimate_message(ask.current.content) if plan is not None else -1
    relevance = plan is not None and plan.memory_order == "relevance"
    asked = storage.TurnQuery(
        conversation=conversation,
        turn_key=ask.turn_key,
        character=conversation.character.slug,
        memory=memory,
        room=room,
        n_recent=QUERY_HISTORY if relevance else 0,
        learning=learning,
        capabilities=[c.name for c in ask.capabilities],
        boundary=ask.current.seq,
    )
    reader = raw_reader(Turn.objects.db)
    if reader is None:
        return read_turn_orm(asked)
    return storage.read_turn(reader, asked, registry=not catalog_registry.warm())


def _registry(rows, learning: bool, plan) -> Registry:
    if rows.registry_rows is not None:
        return catalog_registry.put(Registry(rows.registry_rows))
    if learning or plan is not None:
        return catalog_registry()
    return Registry(())  # I8: learning off and no plan: the turn needs nothing of memory


def _turn_read(
    ask: TurnAsk, profile, rows, memory: ContextMemory, registry, *, learning: bool
) -> pipeline.TurnRead:
    conversation = ask.conversation
    now = ask.now if ask.now is not None else rows.now
    defaults = product_defaults() if ask.capabilities else None
    rules = []
    if ask.capabilities:
        rules = merged_rules(
            rows.rules,
            defaults,
            [c.name for c in ask.capabilities],
            character_id=conversation.character_id,
            now=now,
        )
    context = Context(
        user=conversation.user.username,
        character=conversation.character.slug,
        conversation=str(conversation.pk),
        now=now,
        scene=ask.scene,
    )
    state = memory.at_version(registry)
    return pipeline.TurnRead(
        context=context,
        message=ask.current,
        learn=learning,
        use=profile.use,
        basis=ResolveBasis(
            many_keys=registry.many_keys,
            labels=registry.labels,
            secret=profile.secret_bytes(),
            likely=settings.COMPANION["CERTAINTY_LIKELY"],
            uncertain=settings.COMPANION["CERTAINTY_UNCERTAIN"],
        ),
        last_named=rows.last_named,
        pinned=registry.pinned_keys,
        scope_ids=tuple(context.scope_ids()),
        records=state.state.records,
        tombstones=state.state.tombstones,
        retractions=state.state.retractions,
        history=rows.history,
        texts=rows.texts,
        params=ask.plan,
        capabilities=ask.capabilities,
        rules=rules,
        policy_version=(defaults.version if defaults else 0, rows.user_policy_version),
        resolved=state.resolved,
        by_slot=state.state.by_slot,
        by_group=state.state.by_group,
        label_terms=storage.LABEL_TERMS,
    )


def decide(ask: TurnAsk, read: pipeline.TurnRead) -> pipeline.TurnDecided:
    """The pure pass. Under `skip` a plan may admit a message whose text was not read: its
    text is read and the plan step made again (the writes were decided already)."""

    def new_id() -> str:
        return str(uuid.uuid4())

    decided = pipeline.decide_turn(read, new_id=new_id)
    while decided.needs_texts:
        texts = message_contents(ask.conversation, decided.needs_texts)
        read = dataclasses.replace(read, texts={**read.texts, **texts})
        pipeline.plan_turn(read, decided, read.texts, new_id=new_id)
    return decided


def write(ask: TurnAsk, read, decided, memory: ContextMemory, registry, *, turn) -> Turn:
    """Every row of the request, as one statement on PostgreSQL (`config.storage.RowWriter`):
    for a new turn the seq, the message, the memory writes (memory's to lay out and to keep,
    `apply_writes`) and the turn with its plan snapshot; for a stored turn the snapshot
    alone; and the decision log."""
    conversation = ask.conversation
    writer = RowWriter()
    if ask.creates:
        message = _new_message(writer, conversation, read)
    memory.apply_writes(
        writer,
        decided.writes,
        scope_fields=_scope_fields(conversation, read.context.scene),
        records=decided.records,
        resolved=decided.resolved,
        registry=registry,
        by_slot=decided.by_slot,
        by_group=decided.by_group,
    )
    if ask.creates:
        turn = _new_turn(conversation, read, decided, message, ask)
        writer.insert([turn])
    elif decided.plan is not None:
        turn.plan_snapshot = decided.snapshot.stored()
        turn.plan_hash = decided.snapshot.plan_hash
        writer.update(Turn, turn.pk, plan_snapshot=turn.plan_snapshot, plan_hash=turn.plan_hash)
    writer.insert(_decision_rows(conversation.user, read, decided))
    writer.flush()
    if ask.creates:
        turn.extracted_records = {o.record.id: o.record for o in decided.outcomes if o.record}
        turn.extracted_states = decided.states  # E1, at the turn's time
    return turn


def _new_message(writer: RowWriter, conversation, read) -> Message:
    conversation.last_seq = read.message.seq
    writer.update(Conversation, conversation.pk, last_seq=conversation.last_seq)
    message = Message(
        id=uuid.UUID(read.message.id),
        user=conversation.user,
        conversation=conversation,
        seq=read.message.seq,
        role="user",
        content=read.message.content,
        created_at=read.context.now,
    )
    writer.insert([message])
    return message


def _new_turn(conversation, read, decided, message: Message, ask: TurnAsk) -> Turn:
    turn = Turn(
        id=ask.turn_id,
        user=conversation.user,
        conversation=conversation,
        turn_key=ask.turn_key,
        scene=read.context.scene,
        user_message=message,
        created_at=read.context.now,
        learning=read.learn,
        extracted=[
            {
                "outcome": o.outcome,
                "memory": o.record.id if o.record else None,
                **({"reason": o.reason} if o.reason else {}),
            }
            for o in decided.outcomes
        ],
    )
    if decided.plan is not None:
        turn.plan_snapshot = decided.snapshot.stored()
        turn.plan_hash = decided.snapshot.plan_hash
    return turn


def _decision_rows(user, read, decided) -> list[DecisionLog]:
    scope_ids = list(PolicyContext.of(read.context).scope_ids)
    return [
        DecisionLog(
            id=decision_id,
            user=user,
            capability=capability.name,
            requested_by=pipeline.REQUESTED_BY,
            effect=decision.effect,
            reason=decision.reason,
            rule_ids=list(decision.rule_ids),
            defaults_version=read.policy_version[0],
            user_version=read.policy_version[1],
            scope_ids=scope_ids,
            decided_at=read.context.now,
        )
        for decision_id, capability, decision in decided.decisions
    ]


def _scope_fields(conversation: Conversation, scene: str | None) -> dict:
    """The scope columns of new records, by scope id, for the scopes the turn sees."""
    return scope_columns(
        conversation.user.username,
        (conversation.character.slug, conversation.character_id),
        conversation.pk,
        scene,
    )


def outcomes(read: pipeline.TurnRead, decided: pipeline.TurnDecided) -> list[DecisionOutcome]:
    """The decisions as the API answers them (D1–D7, E2)."""
    version = PolicyVersion(defaults=read.policy_version[0], user=read.policy_version[1])
    return [
        DecisionOutcome(
            decision_id=decision_id,
            capability=capability.name,
            decision=decision,
            policy_version=version,
            question=capability.question,
        )
        for decision_id, capability, decision in decided.decisions
    ]


def log(taken: TurnTaken) -> None:
    """SPEC §12: ids, counts, reasons, versions and hashes — never text."""
    read, decided, turn = taken.read, taken.decided, taken.turn
    for item, outcome in zip(decided.found, decided.outcomes, strict=True):
        record = outcome.record
        log_learned(item, outcome, sources=len(record.sources) if record else 1)
    metrics.resolve_observed(len(decided.records))
    for decision_id, capability, decision in decided.decisions:
        log_decision(
            decision_id=decision_id,
            capability=capability.name,
            requested_by=pipeline.REQUESTED_BY,
            decision=decision,
            rules_loaded=len(read.rules),
            version=read.policy_version,
        )
    if decided.plan is not None:
        log_plan(
            turn.pk,
            resolve_log_line(
                turn.conversation.user.pk,
                len(decided.records),
                decided.resolution,
                decided.projection,
            ),
            decided.plan,
            read.params,
            use=read.use,
        )


def log_plan(turn_id, resolve_line: str, plan: Plan, params: PlanParams, *, use: bool) -> None:
    """SPEC §12: a plan's ids, counts and hash with its resolve's — never text. One line per
    plan made, for a new turn or a stored one."""
    log_plans.info(
        "prompt_plan turn=%s %s history=%d memories=%d excluded=%d tokens=%d budget=%d "
        "memory_order=%s memory_use=%s plan_hash=%s",
        turn_id,
        resolve_line,
        len(plan.history),
        len(plan.memories),
        sum(n for _, _, n in plan.excluded_counts),
        plan.estimated_tokens,
        params.budget,
        params.memory_order,
        "on" if use else "off",
        plan.plan_hash,
    )
