"""The continuity check (SPEC §11): the public rooftop-greenhouse protocol, played through the
real services on a fresh user, scored on the *prompt plans* the runtime would get — never on
generated prose.

Phases, as a chat runtime would drive them:

1. baseline in the greenhouse scene (the basil plant Harbor, "I dislike being rushed", an
   unfinished letter the user does not want to send tonight);
2. the correction: "I renamed the basil plant. It is Marlowe now, not Harbor.";
3. a tone change to playful, which the companion must ask about before using, and a
   summary that invents an outcome (the letter was sent) with no evidence;
4. a scene change downstairs, bringing the letter and leaving Marlowe behind;
5. a return days later: "What did we leave unresolved last time?";
6. the relevance scene (I6): asked about the unsent letter with a budget whose memory share
   fits only a few memories, a plan ordered by relevance holds memories about the letter.

Each check is structural (which memories, values, certainties, exclusion reasons and policy
effects the plan holds) and cites the rule it exercises.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction

from config.clock import db_now
from conversations.scopes import Scope
from conversations.selectors import LoadedContext
from conversations.services import character_put, conversation_create, user_delete, user_put
from memory.forgetting import forget_key
from memory.services import memory_assert
from policy.services import decision_answer, decision_make

from .creation import turn_create
from .plans import turn_prompt_plan
from .replies import turn_commit_reply

User = get_user_model()

CATEGORIES = ("correction", "recall", "uncertainty", "progression", "user control")
BUDGET = 1200
# The relevance scene's budget: its memory share (0.3 × 120 = 36 tokens) fits two or three
# short memories of the six the plan could hold.
TIGHT_BUDGET = 120

SETUP = (
    "We meet every Thursday at a quiet rooftop greenhouse. You are the night caretaker. "
    "The basil plant is named Harbor. I dislike being rushed. I live in Boston. "
    "I am trying to finish a short letter but do not want to send it tonight."
)


@dataclass
class Check:
    category: str
    name: str
    passed: bool
    detail: str = ""


@dataclass
class Scorecard:
    checks: list[Check] = field(default_factory=list)

    def check(self, category: str, name: str, passed: bool, detail: str = "") -> None:
        assert category in CATEGORIES
        self.checks.append(Check(category, name, bool(passed), detail))

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def lines(self) -> list[str]:
        out = []
        for category in CATEGORIES:
            mine = [c for c in self.checks if c.category == category]
            good = sum(c.passed for c in mine)
            out.append(f"{category:<13} {good}/{len(mine)}")
            for c in mine:
                mark = "PASS" if c.passed else "FAIL"
                out.append(
                    f"  [{mark}] {c.name}" + (f" — {c.detail}" if c.detail and not c.passed else "")
                )
        total = sum(c.passed for c in self.checks)
        out.append(
            f"{'total':<13} {total}/{len(self.checks)} {'passed' if self.passed else 'FAILED'}"
        )
        return out


def _values(result, key: str) -> list[str]:
    return [m.value for m in result.plan.memories if m.key == key]


def _certainty(result, key: str) -> str | None:
    return next((m.certainty for m in result.plan.memories if m.key == key), None)


def _memory_text(result) -> str:
    return " | ".join(f"{m.key}={m.value}" for m in result.plan.memories)


def _excluded(result, record_id: str) -> str | None:
    return next(
        (r for kind, i, r in result.plan.excluded if kind == "memory" and i == record_id), None
    )


def _policy(result, capability: str):
    return next((d for d in result.decisions if d.capability == capability), None)


class _Runtime:
    """What a chat runtime does on every message: create the turn, get the plan, reply."""

    def __init__(self, conversation):
        self.conversation = conversation
        self.n = 0

    def say(
        self,
        content: str,
        *,
        scene: str | None,
        reply: str,
        capabilities=(),
        now=None,
        budget: int = BUDGET,
        memory_order: str = "certainty",
        then=None,
    ):
        """One turn. `then()` runs after the message is stored and before the plan, as a
        runtime acts on what the message asks (a forget) before it asks for the plan."""
        self.n += 1
        turn = turn_create(
            conversation_id=self.conversation.pk,
            turn_key=f"t{self.n}",
            content=content,
            scene=scene,
        ).turn
        if then is not None:
            then()
        plan = turn_prompt_plan(
            turn_id=turn.pk,
            budget=budget,
            capabilities=tuple(capabilities),
            now=now,
            memory_order=memory_order,
        )
        turn_commit_reply(turn_id=turn.pk, content=reply)
        return turn, plan

    def infer(self, key: str, value: str, *, scope: Scope, confidence=1.0, evidence=()):
        """What the runtime's own model infers (§8, `model-inferred`), with the user messages
        of the turns in `evidence` as its sources."""
        return memory_assert(
            user=self.conversation.user,
            key=key,
            value=value,
            scope=scope,
            confidence=confidence,
            sources=[str(t.user_message_id) for t in evidence],
        )


def play(
    *, username: str | None = None, keep: bool = False, days_later: timedelta = timedelta(days=3)
) -> tuple[Scorecard, User]:
    """Play the protocol on a new user (deleted afterwards unless `keep`). The return of
    phase 5 is planned `days_later` after the clock (the demo spreads its times over days
    itself, `turns.demo`, and asks for none)."""
    card = Scorecard()
    username = username or f"continuity-{uuid.uuid4().hex[:10]}"
    user, _ = user_put(ref=username)
    try:
        _play(card, user, days_later)
    finally:
        if not keep:
            user_delete(user=user)
    return card, user


def _play(card: Scorecard, user, days_later: timedelta) -> None:
    caretaker, _ = character_put(slug="night-caretaker", name="The Night Caretaker")
    lamplighter, _ = character_put(slug="lamplighter", name="The Lamplighter")
    conversation = conversation_create(
        user=user, character=caretaker, title="The rooftop greenhouse"
    )
    runtime = _Runtime(conversation)
    convo = Scope("conversation", conversation=str(conversation.pk))

    # A fact told to another character stays with that character (R1).
    elsewhere = conversation_create(user=user, character=lamplighter, title="Lamplighter's rounds")
    with transaction.atomic():
        memory_assert(
            user=user,
            key="story.secret_door",
            value="behind the boiler room",
            scope=Scope("character", character=lamplighter.slug),
            authority="user-confirmed",
        )

    # Phase 1 — baseline.
    t1, p1 = runtime.say(
        SETUP, scene="greenhouse", reply="Welcome back to the greenhouse. No hurry tonight."
    )
    extracted_keys = {e["memory"] and e["outcome"] for e in t1.extracted}
    # The runtime's own model extractions, with the message as evidence.
    letter = runtime.infer(
        "story.letter.status",
        "unfinished; not to be sent tonight",
        scope=convo,
        confidence=0.7,
        evidence=[t1],
    ).record
    runtime.infer(
        "story.meeting",
        "Thursdays at the rooftop greenhouse",
        scope=convo,
        confidence=0.9,
        evidence=[t1],
    )
    for line, reply in (
        (
            "The thyme needs water.",
            "I will fill the can before we sit down; thyme likes the rain barrel best.",
        ),
        (
            "Tell me about the night shift.",
            "Quiet, mostly: the sprinklers at two, and the moths at the glass.",
        ),
        (
            "I switched on the work lamp. Let us sit by the window for a while.",
            "The lamp makes the whole greenhouse glow. The window seat is yours.",
        ),
    ):
        lamp, _ = runtime.say(line, scene="greenhouse", reply=reply)
    # The scene's detail, with the message that says it as evidence.
    runtime.infer(
        "scene.lamp",
        "the work lamp is on",
        scope=Scope("scene", conversation=str(conversation.pk), scene="greenhouse"),
        confidence=0.9,
        evidence=[lamp],
    )
    _, p_base = runtime.say(
        "What is growing tonight?",
        scene="greenhouse",
        reply="Harbor is thriving, and the thyme has perked up.",
    )
    card.check(
        "recall",
        "the setup is extracted from the user's own words (§8)",
        "created" in extracted_keys
        and _values(p_base, "basil_plant.name") == ["Harbor"]
        and _values(p_base, "user.dislikes") == ["being rushed"],
        _memory_text(p_base),
    )
    card.check(
        "recall",
        "a fact told to another character does not leak (R1)",
        not _values(p_base, "story.secret_door"),
        _memory_text(p_base),
    )

    # The user asks the companion to forget where they live; the runtime forgets it after the
    # message that asks, before that turn's plan.
    lives = next((e for e in t1.extracted if e.get("memory")), None)
    _, p_forgot = runtime.say(
        "Please forget where I live.",
        scene="greenhouse",
        reply="Done: where you live is gone, and I will not bring it up again.",
        then=lambda: forget_key(user=user, key="user.lives_in", scope_id="*"),
    )
    resummary = runtime.infer("user.lives_in", "Boston", scope=Scope("user"), evidence=[t1])
    card.check(
        "user control",
        "a forgotten fact stays out of the plan (F2)",
        not _values(p_forgot, "user.lives_in") and lives is not None,
        _memory_text(p_forgot),
    )
    card.check(
        "user control",
        "an old summary cannot bring a forgotten fact back (F3)",
        resummary.outcome == "blocked",
        resummary.outcome,
    )

    # Phase 2 — the correction.
    t_fix, p_fix = runtime.say(
        "I renamed the basil plant. It is Marlowe now, not Harbor.",
        scene="greenhouse",
        reply="Marlowe it is. I will use the new name from now on.",
    )
    _, p_after = runtime.say(
        "How is the plant doing?",
        scene="greenhouse",
        reply="Marlowe looks well: two new leaves since last time.",
    )
    corrected = [e for e in t_fix.extracted if e["outcome"] == "created"]
    card.check(
        "correction",
        "the correction is stored as the user's (§8, user-corrected)",
        len(corrected) == 1,
        str(t_fix.extracted),
    )
    card.check(
        "correction",
        "only the new name is in the next plan (I2)",
        _values(p_after, "basil_plant.name") == ["Marlowe"],
        _memory_text(p_after),
    )
    card.check(
        "correction",
        "the old name is excluded as superseded (R5)",
        any(r == "superseded" for k, _, r in p_after.plan.excluded if k == "memory"),
        str(p_after.plan.excluded),
    )
    card.check(
        "correction",
        "the correction replaced nothing else (W6)",
        _values(p_after, "user.dislikes") == ["being rushed"]
        and bool(_values(p_after, "story.letter.status")),
        _memory_text(p_after),
    )

    # Phase 3 — tone change (asked before used) and an invented outcome.
    turn3, p_tone_before = runtime.say(
        "I am feeling more playful now, but I still do not want to send the letter.",
        scene="greenhouse",
        capabilities=("tone.playful",),
        reply="I would love to be a little playful. Shall I?",
    )
    asked = _policy(p_tone_before, "tone.playful")
    card.check(
        "user control",
        "playful tone is asked about before any rule exists (D2)",
        asked is not None and asked.decision.effect == "ask",
        asked and asked.decision.reason,
    )
    ctx = LoadedContext(
        user=user,
        character=caretaker,
        conversation=conversation,
        scene="greenhouse",
        now=db_now(),
        now_given=False,
    )
    decision = decision_make(context=ctx, capability="tone.playful", requested_by="assistant")
    decision_answer(decision_id=decision.decision_id, answer="allow", remember="conversation")
    invented = runtime.infer(
        "story.letter.outcome", "sent to its recipient", scope=convo, confidence=0.95
    ).record
    _, p_tone = runtime.say(
        "Tell me a silly story about the greenhouse.",
        scene="greenhouse",
        capabilities=("tone.playful",),
        reply="Once upon a time the watering can went on strike, "
        "and the basil had to sing for rain.",
    )
    allowed = _policy(p_tone, "tone.playful")
    card.check(
        "user control",
        "the user's tone choice is honoured in later plans (D8)",
        allowed is not None and allowed.decision.effect == "allow",
        allowed and allowed.decision.reason,
    )
    card.check(
        "uncertainty",
        "an unsupported summary claiming the letter was sent is excluded (P1)",
        _excluded(p_tone, invented.id) == "unsupported"
        and not _values(p_tone, "story.letter.outcome"),
        str(_excluded(p_tone, invented.id)),
    )
    card.check(
        "uncertainty",
        "the letter's state is kept and marked uncertain (P2, I5)",
        _certainty(p_tone, "story.letter.status") == "uncertain",
        _memory_text(p_tone),
    )

    # Phase 4 — scene change.
    t4, p_down = runtime.say(
        "Let us leave the greenhouse and walk downstairs. Bring the letter, but leave Marlowe "
        "where it is.",
        scene="downstairs",
        reply="Down we go, letter in hand.",
    )
    runtime.infer(
        "basil_plant.location",
        "the rooftop greenhouse",
        scope=convo,
        confidence=0.9,
        evidence=[t4],
    )
    runtime.infer(
        "story.letter.location", "with us, downstairs", scope=convo, confidence=0.9, evidence=[t4]
    )
    _, p_stairs = runtime.say(
        "It is quieter down here.",
        scene="downstairs",
        reply="It is. Only the boiler hums down here, and the letter is safe in your coat.",
    )
    card.check(
        "progression",
        "the new scene carries the letter along (conversation scope)",
        bool(_values(p_stairs, "story.letter.status"))
        and _values(p_stairs, "story.letter.location") == ["with us, downstairs"],
        _memory_text(p_stairs),
    )
    card.check(
        "progression",
        "Marlowe stays where it was left",
        _values(p_stairs, "basil_plant.location") == ["the rooftop greenhouse"],
        _memory_text(p_stairs),
    )
    card.check(
        "progression",
        "the greenhouse scene's details stay in the greenhouse (R1)",
        not _values(p_stairs, "scene.lamp") and bool(_values(p_base, "scene.lamp")),
        _memory_text(p_stairs),
    )
    history_ids = [m.id for m, _ in p_stairs.plan.history]
    card.check(
        "progression",
        "the plan's history holds the scene change, before the current message (I1)",
        str(t4.user_message_id) in history_ids
        and all(m.seq < p_stairs.plan.boundary_seq for m, _ in p_stairs.plan.history),
        str(history_ids[-3:]),
    )

    # Phase 5 — a return days later.
    later = db_now() + days_later
    _, p_return = runtime.say(
        "What did we leave unresolved last time?",
        scene="downstairs",
        capabilities=("tone.playful",),
        now=later,
        reply="The letter: it is still unfinished, and you did not want to send it yet.",
    )
    card.check(
        "recall",
        "the unresolved letter is recalled on return",
        bool(_values(p_return, "story.letter.status")),
        _memory_text(p_return),
    )
    card.check(
        "uncertainty",
        "nothing in the returning plan claims the letter was sent",
        not _values(p_return, "story.letter.outcome")
        and all(m.value != invented.value for m in p_return.plan.memories),
        _memory_text(p_return),
    )
    card.check(
        "correction",
        "days later, still only Marlowe (I2)",
        _values(p_return, "basil_plant.name") == ["Marlowe"],
        _memory_text(p_return),
    )
    card.check(
        "recall",
        "recall is selective: no forgotten, superseded or other character's facts",
        not _values(p_return, "user.lives_in")
        and not _values(p_return, "story.secret_door")
        and "Harbor" not in _memory_text(p_return),
        _memory_text(p_return),
    )
    card.check(
        "recall",
        "the plan stays within its budget (I3)",
        p_return.plan.estimated_tokens <= BUDGET,
        str(p_return.plan.estimated_tokens),
    )
    still = _policy(p_return, "tone.playful")
    card.check(
        "user control",
        "the tone choice still holds on return (D8)",
        still is not None and still.decision.effect == "allow",
        still and still.decision.reason,
    )

    # Phase 6 — relevance (I6): a tight budget, a question about the unsent letter.
    _, p_letter = runtime.say(
        "Can we talk about the letter? I still have not sent it.",
        scene="downstairs",
        now=later,
        budget=TIGHT_BUDGET,
        memory_order="relevance",
        reply="Of course. There is no hurry: it can wait until you are ready.",
    )
    about_letter = [m for m in p_letter.plan.memories if ".letter." in f".{m.key}."]
    card.check(
        "recall",
        "asked about the unsent letter on a tight budget, the plan brings the letter (I6)",
        bool(about_letter)
        and len(about_letter) == len(p_letter.plan.memories)
        and p_letter.plan.memory_order == "relevance"
        and any(r == "budget" for k, _, r in p_letter.plan.excluded if k == "memory"),
        _memory_text(p_letter),
    )
    card.check(
        "uncertainty",
        "the relevance plan keeps the letter uncertain and unsent (I6, P2)",
        _certainty(p_letter, "story.letter.status") == "uncertain"
        and not _values(p_letter, "story.letter.outcome"),
        _memory_text(p_letter),
    )
    _ = (letter, elsewhere, turn3, p1, p_fix, p_down)
