"""The prompt planner (SPEC §7, I1, I3, I6 and the `use` switch of I8; I5 is enforced
upstream by the projection). Standard library only: no Django, no clock, no database, so the
same inputs always give the same plan and the same ``plan_hash``.

Order of work in :func:`build_plan`:

1. **Parameters** are validated (``budget`` a positive int, ``memory_share`` in [0, 1],
   ``history`` ``contiguous`` or ``skip``, ``memory_order`` ``certainty`` or ``relevance``)
   → ``ValidationError`` naming the field.
2. **Memory section** (I3): at most ``floor(memory_share × budget)`` tokens. The share is
   taken at its decimal value (``0.29 × 100`` is 29, not 28 as binary floats would give).
   Under ``memory_order=certainty`` (the default) items are filled in the order given — the
   projection already orders them confirmed → likely → uncertain, narrower scope, newer, id
   (the I3 order). Under ``relevance`` (I6) they are filled pinned keys first, then by BM25
   score (see :func:`bm25_scores`), highest first, then in the I3 order. An item that does
   not fit is excluded with reason ``budget`` and filling **continues** with the later items
   (skip and continue), so a long early item does not starve short later ones, and items
   with score 0 still fill what is left. The fill order of the included items is kept.
   Items the resolver/projection excluded (``memory_excluded``) are reported with their own
   reasons. Memories reach the planner only through the projection, so an item without
   provenance never enters the plan (I5), and ordering never changes an item's certainty.
   When the user switched memory use off (I8, ``use_memories=False``) every item goes to
   ``excluded`` with reason ``memory-off`` and the section is empty.
3. **Current message** (I1, I3): it must fit in ``budget − memory_tokens``, else
   ``BudgetExceeded`` naming the needed and available tokens. It appears exactly once, as
   ``Plan.current``.
4. **History** (I1, I3): only messages with ``seq < current.seq`` and an id other than
   ``current.id`` are eligible; anything else passed in is dropped silently (it is outside
   the turn boundary, not "excluded"). Duplicate ids are kept once. The rest of the budget
   is filled newest-first by ``seq`` (then id; timestamps never matter) and the history is
   returned oldest-first. Policy ``contiguous`` stops at the first message that does not fit
   (it and every older message → ``budget``); ``skip`` excludes it and keeps trying older
   ones. :func:`select_history` does this on byte lengths only, so a database can load the
   content of the chosen messages alone.

``estimated_tokens = memory_tokens + current_tokens + Σ history tokens <= budget`` always.

``plan_hash`` is the SHA-256 hex of a canonical JSON (sorted keys, ``(",", ":")``
separators, ``ensure_ascii=False``) of the current message (id, seq, role, content), the
history (id, seq, role, content, oldest-first), the included memories in fill order
(record id plus the prompt shape: key, label, value, certainty, scope), the parameters
(budget, memory_share as a float, history policy, sorted distinct capabilities and, for a
plan ordered by relevance, ``memory_order`` and the stopword list's version) and the
resolver version. It covers neither ``now`` nor decision ids nor the exclusions, so the same
state and parameters give the same hash whatever order the inputs arrived in. A plan ordered
by certainty hashes exactly as it did before the relevance order existed (its payload has no
``memory_order`` entry; the stopwords cannot change it), so its hash is stable across a change
of the stopword list; a relevance plan's payload names both, so the two orders never share
a hash.

**Relevance (I6).** Terms of a text (:func:`terms`): NFKC, casefold, split on every
character that is not a letter (Unicode category L*) or a decimal digit (Nd), then drop terms
of one character and the stopwords of :mod:`turns.stopwords`. The query is the
terms of the current message plus those of the last ``QUERY_HISTORY`` (2) messages before it,
whatever their role and whether or not the history budget admits them. A memory's document
is the terms of its label, value and key (``basil_plant.name`` → basil, plant, name). Scores
are Okapi BM25 with k1 = 1.2 and b = 0.75 over the memories that passed P1–P4 for this plan,
rounded to 6 decimals before ordering; each plan memory carries its rounded score
(``Plan.relevance``; ``None`` under ``certainty``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import repeat
from operator import attrgetter

from config.errors import BudgetExceeded, ValidationError
from memory.domain import (
    REASON_BUDGET,
    REASON_FORGOTTEN,
    REASON_MEMORY_OFF,
    Exclusion,
    ProjectedMemory,
)
from turns.relevance import QUERY_HISTORY, query_terms, relevance_order
from turns.stopwords import STOPWORDS_VERSION
from turns.tokens import estimate_from_bytes, estimate_memory, estimate_message

HISTORY_POLICIES = ("contiguous", "skip")
MEMORY_ORDERS = ("certainty", "relevance")
DEFAULT_MEMORY_SHARE = 0.3
KIND_MEMORY = "memory"
KIND_MESSAGE = "message"


@dataclass(frozen=True, slots=True)
class PlanMessage:
    """A message as the planner sees it."""

    id: str
    seq: int
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class HistoryCandidate:
    """A history message sized by its UTF-8 octet length, without its content. A withheld
    message (F6: a forget withholds it) is never admitted."""

    id: str
    seq: int
    role: str
    n_bytes: int
    withheld: bool = False


@dataclass(frozen=True)
class PlanParams:
    budget: int
    memory_share: float = DEFAULT_MEMORY_SHARE
    history: str = "contiguous"  # or "skip"
    capabilities: tuple[str, ...] = ()
    memory_order: str = "certainty"  # or "relevance" (I6)


@dataclass(frozen=True)
class Plan:
    boundary_seq: int
    current: PlanMessage
    current_tokens: int
    history: tuple[tuple[PlanMessage, int], ...]  # oldest-first, with token estimates
    memories: tuple[ProjectedMemory, ...]  # in fill order
    memory_tokens: int
    excluded: tuple[tuple[str, str, str], ...]  # (kind, id, reason), sorted by (kind, id)
    estimated_tokens: int
    plan_hash: str
    # I6: the rounded BM25 score of each included memory (aligned with `memories`), or None
    # for every memory under `certainty`.
    relevance: tuple[float | None, ...] = ()
    memory_order: str = "certainty"


# ---------------------------------------------------------------------------------------------
# Parameters


def validate_params(params: PlanParams) -> None:
    """Raise ``ValidationError`` (with the offending field) for unusable parameters."""
    budget = params.budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValidationError("budget must be a positive integer.", field="budget")
    share = params.memory_share
    if (
        isinstance(share, bool)
        or not isinstance(share, int | float)
        or not math.isfinite(share)
        or not 0 <= share <= 1
    ):
        raise ValidationError("memory_share must be a number from 0 to 1.", field="memory_share")
    if params.history not in HISTORY_POLICIES:
        raise ValidationError("history must be 'contiguous' or 'skip'.", field="history")
    caps = params.capabilities
    if isinstance(caps, str) or not all(isinstance(c, str) for c in caps):
        raise ValidationError("capabilities must be a list of strings.", field="capabilities")
    if params.memory_order not in MEMORY_ORDERS:
        raise ValidationError(
            "memory_order must be 'certainty' or 'relevance'.", field="memory_order"
        )


def memory_cap(params: PlanParams) -> int:
    """``floor(memory_share × budget)``, computed on the share's decimal value."""
    return math.floor(Decimal(repr(float(params.memory_share))) * params.budget)


# ---------------------------------------------------------------------------------------------
# History


def _unique_candidates(candidates: Iterable[HistoryCandidate]) -> list[HistoryCandidate]:
    """One candidate per id (the lowest ``(seq, role, n_bytes)``, so input order never
    matters), sorted oldest-first by ``(seq, id)``."""
    best: dict[str, HistoryCandidate] = {}
    for c in candidates:
        kept = best.get(c.id)
        if kept is None or (c.seq, c.role, c.n_bytes) < (kept.seq, kept.role, kept.n_bytes):
            best[c.id] = c
    return sorted(best.values(), key=lambda c: (c.seq, c.id))


def select_history(
    current_tokens_and_memory: int,
    candidates: Sequence[HistoryCandidate],
    budget: int,
    policy: str,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Choose history by size alone (I3). ``budget − current_tokens_and_memory`` tokens are
    filled newest-first by ``seq`` (ties by id). ``contiguous`` stops at the first message
    that does not fit; ``skip`` skips it and continues. Returns ``(chosen_ids,
    excluded_ids)``, both oldest-first. The caller applies the turn boundary (I1) first."""
    if policy not in HISTORY_POLICIES:
        raise ValidationError("history must be 'contiguous' or 'skip'.", field="history")
    available = budget - current_tokens_and_memory
    used = 0
    stopped = False
    chosen: list[str] = []
    excluded: list[str] = []
    for c in reversed(_unique_candidates(candidates)):
        cost = estimate_from_bytes(c.n_bytes)
        if not stopped and used + cost <= available:
            chosen.append(c.id)
            used += cost
        else:
            excluded.append(c.id)
            if policy == "contiguous":
                stopped = True
    chosen.reverse()
    excluded.reverse()
    return tuple(chosen), tuple(excluded)


def _eligible_history(current: PlanMessage, history: Iterable[PlanMessage]) -> list[PlanMessage]:
    """I1: strictly before the current message and never the current message itself. One
    message per id (the lowest ``(seq, role, content)``), oldest-first by ``(seq, id)``."""
    best: dict[str, PlanMessage] = {}
    for m in history:
        if m.id == current.id or m.seq >= current.seq:
            continue
        kept = best.get(m.id)
        if kept is None or (m.seq, m.role, m.content) < (kept.seq, kept.role, kept.content):
            best[m.id] = m
    return sorted(best.values(), key=lambda m: (m.seq, m.id))


# ---------------------------------------------------------------------------------------------
# The plan


_exclusion_id = attrgetter("id")
_exclusion_reason = attrgetter("reason")


def _exclusion_pair(item: tuple[str, str] | Exclusion) -> tuple[str, str]:
    if isinstance(item, Exclusion):
        return item.id, item.reason
    record_id, reason = item
    return record_id, reason


def compute_plan_hash(
    *,
    current: PlanMessage,
    history: Sequence[PlanMessage],
    memories: Sequence[ProjectedMemory],
    params: PlanParams,
    resolver_version: str,
) -> str:
    """SHA-256 hex over the canonical JSON described in the module docstring."""
    payload = {
        "current": _message_payload(current),
        "history": [_message_payload(m) for m in history],
        "memories": [{"id": pm.record.id, **pm.as_prompt()} for pm in memories],
        "params": _params_payload(params),
        "resolver_version": resolver_version,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _params_payload(params: PlanParams) -> dict:
    payload = {
        "budget": params.budget,
        "memory_share": float(params.memory_share),
        "history": params.history,
        "capabilities": sorted(set(params.capabilities)),
    }
    # I6: the order and the stopword list it depends on; a certainty plan's payload is the
    # one it always had (see the module docstring).
    if params.memory_order != "certainty":
        payload["memory_order"] = params.memory_order
        payload["stopwords"] = STOPWORDS_VERSION
    return payload


def _message_payload(m: PlanMessage) -> dict:
    return {"id": m.id, "seq": m.seq, "role": m.role, "content": m.content}


def build_plan(
    *,
    current: PlanMessage,
    history: Sequence[PlanMessage],
    memories: Sequence[ProjectedMemory],
    memory_excluded: Sequence[tuple[str, str] | Exclusion],
    params: PlanParams,
    resolver_version: str,
    history_candidates: Sequence[HistoryCandidate] | None = None,
    fetch_content: Callable[[list[str]], Mapping[str, str]] | None = None,
    pinned_keys: Collection[str] = frozenset(),
    recent: Sequence[str] | None = None,
    use_memories: bool = True,
    withheld: Collection[str] = frozenset(),
) -> Plan:
    """Build the prompt plan for one turn (I1, I3, I6). See the module docstring for the
    rules. ``memories`` are the projection's items in the I3 order; ``memory_excluded`` takes
    ``(id, reason)`` pairs or ``Exclusion`` objects from the resolver and projection.

    A long conversation need not be loaded whole: pass ``history_candidates`` (ids, seqs and
    byte lengths) instead of ``history`` and a ``fetch_content(ids)`` callback; only the
    messages the budget admits are then fetched. Both ways give the same plan.

    Under ``memory_order=relevance``, ``pinned_keys`` are the registry's pinned keys and
    ``recent`` may give the contents of the last ``QUERY_HISTORY`` messages before the
    current one (newest first); without it they are taken from ``history`` or fetched
    through ``fetch_content``. ``use_memories=False`` is the user's `use` switch (I8).

    F6: a withheld message — a candidate marked ``withheld``, or an id in ``withheld`` — is
    not a history candidate: it never enters the history nor I6's query, both history policies
    go on past it, and the plan lists it in ``excluded`` with reason ``forgotten`` (when it
    lies inside the turn boundary)."""
    validate_params(params)
    if history_candidates is not None:
        history_candidates, held = _split_withheld(current, history_candidates, withheld)
    else:
        history, held = _split_withheld_messages(current, history, withheld)
    budget = params.budget
    excluded: set[tuple[str, str, str]] = set()
    relevance_on = params.memory_order == "relevance"

    unique: list[ProjectedMemory] = []
    seen: set[str] = set()
    for pm in memories:
        if pm.record.id not in seen:
            seen.add(pm.record.id)
            unique.append(pm)

    # I8: with memory use off, every projected memory is excluded and the section is empty.
    scores: list[float | None] = [None] * len(unique)
    order = list(range(len(unique)))
    if not use_memories:
        excluded.update((KIND_MEMORY, pm.record.id, REASON_MEMORY_OFF) for pm in unique)
        order = []
    elif relevance_on and unique:
        if recent is None:
            recent = _recent_contents(current, history, history_candidates, fetch_content)
        order, rounded = relevance_order(
            unique, query_terms(current.content, recent[:QUERY_HISTORY]), pinned_keys
        )
        scores = list(rounded)

    # Memory section: skip what does not fit and keep trying later items.
    cap = memory_cap(params)
    chosen_memories: list[ProjectedMemory] = []
    chosen_scores: list[float | None] = []
    memory_tokens = 0
    for index in order:
        pm = unique[index]
        cost = estimate_memory(pm.label, pm.value)
        if memory_tokens + cost <= cap:
            chosen_memories.append(pm)
            chosen_scores.append(scores[index])
            memory_tokens += cost
        else:
            excluded.add((KIND_MEMORY, pm.record.id, REASON_BUDGET))
    try:  # the resolver's and the projection's `Exclusion`s, a few thousand at 10,000 records
        excluded.update(
            zip(
                repeat(KIND_MEMORY),
                map(_exclusion_id, memory_excluded),
                map(_exclusion_reason, memory_excluded),
            )
        )
    except AttributeError:  # (id, reason) pairs among them
        excluded.update((KIND_MEMORY, *_exclusion_pair(item)) for item in memory_excluded)

    # The current message must fit beside the memory section.
    current_tokens = estimate_message(current.content)
    available = budget - memory_tokens
    if current_tokens > available:
        raise BudgetExceeded(
            f"The current message needs {current_tokens} tokens but only {available} are "
            f"available (budget {budget} minus {memory_tokens} for memories).",
            needed_tokens=current_tokens,
            available_tokens=available,
        )

    # History: the boundary first (I1), then the budget by size alone.
    if history_candidates is None:
        eligible = _eligible_history(current, history)
        by_id = {m.id: m for m in eligible}
        candidates = [
            HistoryCandidate(m.id, m.seq, m.role, len(m.content.encode("utf-8"))) for m in eligible
        ]
    else:
        candidates = [c for c in history_candidates if c.id != current.id and c.seq < current.seq]
    chosen_ids, dropped_ids = select_history(
        memory_tokens + current_tokens, candidates, budget, params.history
    )
    if history_candidates is not None:
        if fetch_content is None:
            raise TypeError("history_candidates needs fetch_content")
        contents = fetch_content(list(chosen_ids))
        meta = {c.id: c for c in candidates}
        by_id = {i: PlanMessage(i, meta[i].seq, meta[i].role, contents[i]) for i in chosen_ids}
    chosen_history = tuple((by_id[i], estimate_message(by_id[i].content)) for i in chosen_ids)
    excluded.update((KIND_MESSAGE, i, REASON_BUDGET) for i in dropped_ids)
    excluded.update((KIND_MESSAGE, i, REASON_FORGOTTEN) for i in held)

    estimated = memory_tokens + current_tokens + sum(t for _, t in chosen_history)
    assert estimated <= budget, "planner overran its budget"

    return Plan(
        boundary_seq=current.seq,
        current=current,
        current_tokens=current_tokens,
        history=chosen_history,
        memories=tuple(chosen_memories),
        memory_tokens=memory_tokens,
        excluded=tuple(sorted(excluded)),
        estimated_tokens=estimated,
        plan_hash=compute_plan_hash(
            current=current,
            history=[m for m, _ in chosen_history],
            memories=chosen_memories,
            params=params,
            resolver_version=resolver_version,
        ),
        relevance=tuple(chosen_scores),
        memory_order=params.memory_order,
    )


def _split_withheld(
    current: PlanMessage, candidates: Sequence[HistoryCandidate], withheld: Collection[str]
) -> tuple[list[HistoryCandidate], set[str]]:
    """F6: the candidates a plan may admit, and the ids of the withheld ones (before the turn
    boundary only: anything else is outside the plan, not excluded)."""
    kept: list[HistoryCandidate] = []
    held: set[str] = set()
    for c in candidates:
        if c.withheld or c.id in withheld:
            if c.id != current.id and c.seq < current.seq:
                held.add(c.id)
        else:
            kept.append(c)
    return kept, held


def _split_withheld_messages(
    current: PlanMessage, history: Sequence[PlanMessage], withheld: Collection[str]
) -> tuple[list[PlanMessage], set[str]]:
    if not withheld:
        return list(history), set()
    kept = [m for m in history if m.id not in withheld]
    held = {
        m.id for m in history if m.id in withheld and m.id != current.id and m.seq < current.seq
    }
    return kept, held


def recent_ids(current_seq: int, candidates: Sequence[HistoryCandidate]) -> list[str]:
    """I6's query messages: the ids of the last ``QUERY_HISTORY`` history candidates before the
    current message that are not withheld (F6), newest first."""
    kept = [c for c in candidates if not c.withheld and c.seq < current_seq]
    return [c.id for c in reversed(kept[-QUERY_HISTORY:])]


def _recent_contents(
    current: PlanMessage,
    history: Sequence[PlanMessage],
    history_candidates: Sequence[HistoryCandidate] | None,
    fetch_content: Callable[[list[str]], Mapping[str, str]] | None,
) -> list[str]:
    """I6: the contents of the last ``QUERY_HISTORY`` messages before the current one
    (inside the turn boundary, I1), newest first."""
    if history_candidates is None:
        eligible = _eligible_history(current, history)
        return [m.content for m in reversed(eligible[-QUERY_HISTORY:])]
    candidates = _unique_candidates(
        c for c in history_candidates if c.id != current.id and c.seq < current.seq
    )
    ids = [c.id for c in reversed(candidates[-QUERY_HISTORY:])]
    if not ids:
        return []
    if fetch_content is None:
        raise TypeError("history_candidates needs fetch_content")
    contents = fetch_content(ids)
    return [contents[i] for i in ids]


# ---------------------------------------------------------------------------------------------
# Serialisation


def plan_snapshot(plan: Plan) -> dict:
    """The planner's part of what a turn stores (`conversations.plan_snapshot.PlanSnapshot`
    makes the stored JSON of it): ids, counts and the hash, never text (SPEC §7)."""
    return {
        "boundary_seq": plan.boundary_seq,
        "current": plan.current.id,
        "history": [m.id for m, _ in plan.history],
        "memories": [pm.record.id for pm in plan.memories],
        # SPEC E2: the certainty each memory was given with, beside its id (no text).
        "certainty": [pm.certainty for pm in plan.memories],
        "excluded": plan.excluded,  # (kind, id, reason) triples, stored as JSON arrays
        "estimated_tokens": plan.estimated_tokens,
        "plan_hash": plan.plan_hash,
    }


def plan_body(plan: Plan) -> dict:
    """The planner's part of the §10 plan JSON (the view adds ``turn``, ``policy``,
    ``budget`` and ``resolver_version``)."""
    return {
        "boundary_seq": plan.boundary_seq,
        "current_message": {
            "id": plan.current.id,
            "seq": plan.current.seq,
            "content": plan.current.content,
            "estimated_tokens": plan.current_tokens,
        },
        "history": [
            {
                "id": m.id,
                "seq": m.seq,
                "role": m.role,
                "content": m.content,
                "estimated_tokens": tokens,
            }
            for m, tokens in plan.history
        ],
        "memories": [
            {**pm.as_prompt(), "relevance": score}
            for pm, score in zip(plan.memories, _relevance_of(plan), strict=True)
        ],
        "excluded": [
            {"kind": kind, "id": item_id, "reason": reason}
            for kind, item_id, reason in plan.excluded
        ],
        "estimated_tokens": plan.estimated_tokens,
        "memory_order": plan.memory_order,
        "plan_hash": plan.plan_hash,
    }


def _relevance_of(plan: Plan) -> tuple[float | None, ...]:
    return (
        plan.relevance
        if len(plan.relevance) == len(plan.memories)
        else (None,) * len(plan.memories)
    )
