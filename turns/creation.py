"""Turn creation (SPEC §7: I1, I4, I7, §8): the message stored, what it teaches learnt and,
when asked, the turn planned — read once, decided in one pure pass (`turns.pipeline`), written
once."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import router, transaction

from config import metrics
from config.errors import BudgetExceeded, Conflict, NotFound, ValidationError
from config.storage import RowWriter, raw_reader
from conversations.domain import Context, scope_ids_of
from conversations.models import Conversation, Message, Turn
from memory.selectors.records import Registry, catalog_registry
from memory.selectors.resolution import resolve_log_line
from memory.services import ensure_profile, log_memory_write
from memory.state import ContextMemory, MemoryState
from memory.withholding import withheld_exists
from policy.domain import PolicyContext, PolicyVersion
from policy.models import DecisionLog
from policy.selectors import capabilities_by_name, merged_rules, product_defaults
from policy.services import DecisionOutcome, log_decision

from . import pipeline, storage
from .planner import QUERY_HISTORY, PlanMessage, PlanParams, validate_params
from .plans import PromptPlanResult, log_plan
from .selectors import message_contents, read_turn_orm
from .tokens import estimate_message


def check_content(content: str, *, field: str = "content") -> None:
    limit = settings.COMPANION["MESSAGE_MAX_CHARS"]
    if not isinstance(content, str) or not content.strip():
        raise ValidationError("A message must not be empty.", field=field)
    if len(content) > limit:
        raise ValidationError(f"A message is at most {limit} characters.", field=field)
    if "\x00" in content:
        raise ValidationError("Must not contain NUL characters.", field=field)


@dataclass
class TurnResult:
    """A created (or replayed) turn; for a created turn asked for a plan, the plan too, or
    the `BudgetExceeded` that refused it (the turn stays created, I7)."""

    turn: Turn
    created: bool
    plan: PromptPlanResult | None = None
    refused: BudgetExceeded | None = None


def turn_create(
    *,
    conversation_id,
    turn_key: str,
    content: str,
    scene: str | None = None,
    user=None,
    plan: PlanParams | None = None,
) -> TurnResult:
    """I1/I4: store the user message with the next seq, create the turn (unique per
    conversation and key), learn from the message (SPEC §8) and keep the outcomes; with
    `plan` (I7), plan the turn and decide its capabilities in the same pass. A retry with the
    same key and content returns the same turn (its plan is then made by `plan_for_turn`,
    now); other content is a 409.

    The turn is read once, decided in one pure pass and written once (`turns.pipeline`), in
    one transaction: (1) the conversation with its user, character and memory profile,
    locking the conversation (seq, I4) and the profile (the memory write lock, W8); (2) one
    statement after the locks (`turns.storage.read_turn`): the clock, the turn stored under
    this key, the extractor's "it", the context's memory state, the history and the policy
    inputs; (3) every write — records, sources, retractions, the seq, the message, the turn
    with its plan snapshot, the decision log — as one statement on PostgreSQL. A plan whose
    parameters or capabilities are refused stores nothing (C2): they are checked first.

    I8: with the user's `learn` switch off nothing is extracted and the turn records
    `learning = False`; with `use` off the plan's memory section is empty."""
    if not isinstance(turn_key, str) or not (1 <= len(turn_key) <= 255):
        raise ValidationError("1–255 characters.", field="turn_key")
    check_content(content)
    capabilities = _plan_capabilities(plan) if plan is not None else []
    with transaction.atomic():
        conversation = _lock_conversation(conversation_id, user)
        profile = conversation.user.memory_profile
        scene = scene or None
        scope_ids = scope_ids_of(
            conversation.user.username, conversation.character.slug, str(conversation.pk), scene
        )
        memory = ContextMemory(conversation.user, scope_ids)
        rows = _read(
            conversation,
            turn_key,
            content,
            plan,
            capabilities,
            learning=profile.learn,
            memory=memory,
        )
        if rows.existing_turn is not None:
            return _replayed(rows.existing_turn, conversation, content, scene)
        # Ids in the order the step-by-step path drew them: the message, then the turn.
        message_id, turn_id = uuid.uuid4(), uuid.uuid4()
        registry = _registry(rows, profile, plan)
        read = _turn_read(
            conversation,
            profile,
            rows,
            memory.at_version(registry),
            message_id=message_id,
            content=content,
            scene=scene,
            plan=plan,
            capabilities=capabilities,
            registry=registry,
        )
        decided = _decide_turn(read, conversation)
        turn = _write(
            conversation, read, decided, memory, registry, turn_id=turn_id, turn_key=turn_key
        )
    _log(turn, conversation, read, decided)
    metrics.turn_created(True)
    result = TurnResult(turn, True, refused=decided.refused)
    if decided.plan is not None:
        result.plan = PromptPlanResult(turn, decided.plan, _outcomes(read, decided), plan)
    return result


def _plan_capabilities(plan: PlanParams) -> list[pipeline.Capability]:
    """C2: a plan's parameters and capabilities are checked before anything is written; the
    errors name their field inside `plan`."""
    try:
        validate_params(plan)
        found = capabilities_by_name(list(dict.fromkeys(plan.capabilities)))
    except ValidationError as exc:
        if exc.errors:
            exc.errors = {f"plan.{name}": messages for name, messages in exc.errors.items()}
        raise
    return [pipeline.Capability(c.name, c.question) for c in found.values()]


def _lock_conversation(conversation_id, user) -> Conversation:
    """The conversation with its user, character and memory profile, its row and the profile's
    locked in one statement, built once per process (`turns.storage.lock_conversation`). A
    user without a profile yet (one made outside `user_put`) gets one first."""
    user_id = user.pk if user is not None else None
    alias = router.db_for_write(Conversation)
    conversation = storage.lock_conversation(alias, conversation_id, user_id)
    if conversation is None:
        plain = Conversation.objects.select_related("user").filter(pk=conversation_id)
        if user_id is not None:
            plain = plain.filter(user_id=user_id)
        found = plain.first()
        if found is None:
            raise NotFound("No such conversation.")
        ensure_profile(found.user)
        conversation = storage.lock_conversation(alias, conversation_id, user_id)
    return conversation


def _read(conversation, turn_key, content, plan, capabilities, *, learning, memory: ContextMemory):
    """`turns.storage.read_turn`, or its ORM reference (`read_turn_orm`) where the raw reader
    does not serve the database. The history's text is read for what a plan could admit
    beside the message: its budget less the message's estimate (I3)."""
    room = plan.budget - estimate_message(content) if plan is not None else -1
    relevance = plan is not None and plan.memory_order == "relevance"
    found = dict(
        conversation=conversation,
        turn_key=turn_key,
        character=conversation.character.slug,
        memory=memory,
        room=room,
        n_recent=QUERY_HISTORY if relevance else 0,
        learning=learning,
        capabilities=[c.name for c in capabilities],
    )
    reader = raw_reader(Turn.objects.db)
    if reader is None:
        return read_turn_orm(**found)
    return storage.read_turn(reader, registry=not catalog_registry.warm(), **found)


def _registry(rows, profile, plan) -> Registry:
    if rows.registry_rows is not None:
        return catalog_registry.put(Registry(rows.registry_rows))
    if profile.learn or plan is not None:
        return catalog_registry()
    return Registry(())  # I8: learning off and no plan: the turn needs nothing of memory


def _turn_read(
    conversation,
    profile,
    rows,
    memory: MemoryState,
    *,
    message_id,
    content,
    scene,
    plan,
    capabilities,
    registry,
) -> pipeline.TurnRead:
    defaults = product_defaults() if capabilities else None
    rules = []
    if capabilities:
        rules = merged_rules(
            rows.rules,
            defaults,
            [c.name for c in capabilities],
            character_id=conversation.character_id,
            now=rows.now,
        )
    context = Context(
        user=conversation.user.username,
        character=conversation.character.slug,
        conversation=str(conversation.pk),
        now=rows.now,
        scene=scene,
    )
    return pipeline.TurnRead(
        context=context,
        message=PlanMessage(str(message_id), conversation.last_seq + 1, "user", content),
        learn=profile.learn,
        use=profile.use,
        secret=profile.secret_bytes(),
        last_named=rows.last_named,
        many_keys=registry.many_keys,
        labels=registry.labels,
        pinned=registry.pinned_keys,
        scope_ids=tuple(context.scope_ids()),
        records=memory.state.records,
        tombstones=memory.state.tombstones,
        retractions=memory.state.retractions,
        history=rows.history,
        texts=rows.texts,
        likely=settings.COMPANION["CERTAINTY_LIKELY"],
        uncertain=settings.COMPANION["CERTAINTY_UNCERTAIN"],
        params=plan,
        capabilities=capabilities,
        rules=rules,
        policy_version=(defaults.version if defaults else 0, rows.user_policy_version),
        resolved=memory.resolved,
        by_slot=memory.state.by_slot,
        by_group=memory.state.by_group,
    )


def _decide_turn(read: pipeline.TurnRead, conversation) -> pipeline.TurnDecided:
    """The pure pass; under `skip` a plan may admit a message whose text was not read: then
    its text is read and the plan made again (the writes were decided already)."""

    def new_id() -> str:
        return str(uuid.uuid4())

    decided = pipeline.decide_turn(dataclasses.replace(read, params=None), new_id=new_id)
    if read.params is None:
        return decided
    texts = dict(read.texts)
    while True:
        try:
            pipeline.plan_turn(read, decided, texts, new_id=new_id)
            return decided
        except pipeline.NeedTexts as needed:
            texts.update(message_contents(conversation, needed.ids))


def _scope_fields(conversation: Conversation, scene: str | None) -> dict:
    """The scope columns of new records, by scope id, for the scopes the turn sees."""
    user = conversation.user.username
    fields = {
        f"character:{user}:{conversation.character.slug}": {
            "scope_kind": "character",
            "character_id": conversation.character_id,
            "conversation_id": None,
            "scene": None,
        },
        f"conversation:{conversation.pk}": {
            "scope_kind": "conversation",
            "character_id": None,
            "conversation_id": conversation.pk,
            "scene": None,
        },
    }
    if scene is not None:
        fields[f"scene:{conversation.pk}:{scene}"] = {
            "scope_kind": "scene",
            "character_id": None,
            "conversation_id": conversation.pk,
            "scene": scene,
        }
    return fields


def _write(
    conversation, read, decided, memory: ContextMemory, registry, *, turn_id, turn_key
) -> Turn:
    """Every row of the turn, as one statement on PostgreSQL (`config.storage.RowWriter`): the
    seq, the message, the memory writes (memory's to lay out and to keep, `apply_writes`),
    the turn with its plan snapshot, the decision log."""
    user = conversation.user
    now = read.context.now
    writer = RowWriter()
    conversation.last_seq = read.message.seq
    writer.update(Conversation, conversation.pk, last_seq=conversation.last_seq)
    message = Message(
        id=uuid.UUID(read.message.id),
        user=user,
        conversation=conversation,
        seq=read.message.seq,
        role="user",
        content=read.message.content,
        created_at=now,
    )
    writer.insert([message])
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
    turn = Turn(
        id=turn_id,
        user=user,
        conversation=conversation,
        turn_key=turn_key,
        scene=read.context.scene,
        user_message=message,
        created_at=now,
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
    writer.insert([turn])
    scope_ids = list(PolicyContext.of(read.context).scope_ids)
    writer.insert(
        [
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
                decided_at=now,
            )
            for decision_id, capability, decision in decided.decisions
        ]
    )
    writer.flush()
    turn.extracted_records = {o.record.id: o.record for o in decided.outcomes if o.record}
    turn.extracted_states = decided.states  # E1, at the turn's time
    return turn


def _outcomes(read: pipeline.TurnRead, decided: pipeline.TurnDecided) -> list[DecisionOutcome]:
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


def _log(turn: Turn, conversation, read: pipeline.TurnRead, decided: pipeline.TurnDecided) -> None:
    """SPEC §12: ids, counts, reasons, versions and hashes — never text."""
    for item, outcome in zip(decided.found, decided.outcomes, strict=True):
        record = outcome.record
        log_memory_write(
            outcome=outcome.outcome,
            reason=outcome.reason,
            key=item.key,
            scope_kind=record.scope.kind if record else "user",
            authority=record.authority
            if record
            else ("user-corrected" if item.correction else "rule-extracted"),
            sources=len(record.sources) if record else 1,
        )
    metrics.resolve_observed(len(decided.records))
    version = read.policy_version
    for decision_id, capability, decision in decided.decisions:
        log_decision(
            decision_id=decision_id,
            capability=capability.name,
            requested_by=pipeline.REQUESTED_BY,
            decision=decision,
            rules_loaded=len(read.rules),
            version=version,
        )
    if decided.plan is not None:
        log_plan(
            turn.pk,
            resolve_log_line(
                conversation.user.pk, len(decided.records), decided.resolution, decided.projection
            ),
            decided.plan,
            read.params,
            use=read.use,
        )


def _replayed(turn_id, conversation: Conversation, content: str, scene) -> TurnResult:
    """I4: the same key and content answer the turn stored under it (200); other content or
    another scene is a conflict. The turn is read with whether a forget withholds its message,
    which refuses a replay's plan (F7.1)."""
    existing = (
        Turn.objects.select_related("user_message")
        .annotate(message_withheld=withheld_exists("user_message_id"))
        .get(pk=turn_id)
    )
    existing.conversation = conversation  # the row locked above, with its user
    if existing.user_message.content != content or (existing.scene or None) != scene:
        raise Conflict("This turn_key was used with other content.")
    metrics.turn_created(False)
    return TurnResult(existing, False)
