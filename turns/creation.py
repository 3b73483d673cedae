"""Turn creation (SPEC §7: I1, I4, I7, §8): the message stored, what it teaches learnt and,
when asked, the turn planned — read once, decided in one pure pass (`turns.pipeline`), written
once."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import router, transaction

from config import metrics
from config.errors import BudgetExceeded, Conflict, NotFound, ValidationError
from conversations.models import Conversation, Turn
from memory.services import ensure_profile
from memory.withholding import withheld_exists
from policy.selectors import capabilities_by_name

from . import pipeline, storage, turn_path
from .planner import PlanMessage, PlanParams, validate_params
from .plans import PromptPlanResult, plan_stored_turn


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
    same key and content returns the same turn, with a plan made now when `plan` is given
    (I7); other content is a 409.

    One transaction on the one turn path (`turns.turn_path`): the conversation with its
    user, character and memory profile, locking the conversation (seq, I4) and the profile
    (the memory write lock, W8); then read once, one pure pass, one write. A plan whose
    parameters or capabilities are refused stores nothing (C2): they are checked first.

    I8: with the user's `learn` switch off nothing is extracted and the turn records
    `learning = False`; with `use` off the plan's memory section is empty."""
    if not isinstance(turn_key, str) or not (1 <= len(turn_key) <= 255):
        raise ValidationError("1–255 characters.", field="turn_key")
    check_content(content)
    capabilities = _plan_capabilities(plan) if plan is not None else ()
    with transaction.atomic():
        conversation = _lock_conversation(conversation_id, user)
        ask = turn_path.TurnAsk(
            conversation=conversation,
            current=PlanMessage("", conversation.last_seq + 1, "user", content),
            scene=scene or None,
            plan=plan,
            capabilities=capabilities,
            creates=True,
            turn_key=turn_key,
        )
        taken = turn_path.take(ask)
        if taken.existing is not None:
            return _replayed(taken.existing, ask)
    turn_path.log(taken)
    metrics.turn_created(True)
    decided = taken.decided
    result = TurnResult(taken.turn, True, refused=decided.refused)
    if decided.plan is not None:
        result.plan = PromptPlanResult(
            taken.turn, decided.plan, turn_path.outcomes(taken.read, decided), plan
        )
    return result


def _plan_capabilities(plan: PlanParams) -> tuple[pipeline.Capability, ...]:
    """C2: a plan's parameters and capabilities are checked before anything is written; the
    errors name their field inside `plan`."""
    try:
        validate_params(plan)
        found = capabilities_by_name(list(dict.fromkeys(plan.capabilities)))
    except ValidationError as exc:
        if exc.errors:
            exc.errors = {f"plan.{name}": messages for name, messages in exc.errors.items()}
        raise
    return tuple(pipeline.Capability(c.name, c.question) for c in found.values())


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


def _replayed(turn_id, ask) -> TurnResult:
    """I4: the same key and content answer the turn stored under it (200); other content or
    another scene is a conflict. With a plan (I7) the stored turn is planned now, on the turn
    path (`turns.plans.plan_stored_turn`): a turn whose message a forget withholds since has
    none (F7.1: `MessageWithheld`), and a plan refused for its budget names the turn."""
    existing = (
        Turn.objects.select_related("user_message")
        .annotate(message_withheld=withheld_exists("user_message_id"))
        .get(pk=turn_id)
    )
    existing.conversation = ask.conversation  # the row locked above, with its user
    if existing.user_message.content != ask.current.content or (existing.scene or None) != (
        ask.scene
    ):
        raise Conflict("This turn_key was used with other content.")
    metrics.turn_created(False)
    result = TurnResult(existing, False)
    if ask.plan is not None:
        try:
            result.plan = plan_stored_turn(existing, ask.plan, ask.capabilities)
        except BudgetExceeded as exc:
            exc.extra["turn"] = str(existing.pk)
            raise
    return result
