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

**What is left out (I9)** is counted whole and listed bounded (:mod:`turns.left_out`):
``Plan.excluded_counts`` holds ``(kind, reason, count)`` for every ``(kind, reason)``, sorted;
``Plan.excluded`` at most 20 ``(kind, id, reason)`` per ``(kind, reason)``, the groups in the
same order, each in its rule's order — messages newest first, memories in the fill order for
``budget`` and by id for every other reason (whatever reasons the inputs carry). A plan's
size follows what it holds, never what is stored.

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
from itertools import compress, count
from operator import attrgetter

from config.errors import BudgetExceeded, ValidationError
from memory.domain import (
    REASON_BUDGET,
    REASON_FORGOTTEN,
    REASON_MEMORY_OFF,
    Exclusion,
    ProjectedMemory,
)
from turns import history_order
from turns.history_order import InOrder
from turns.left_out import UNRANKED, LeftOut
from turns.relevance import QUERY_HISTORY, LabelTerms, query_terms, relevance_order
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
    # I9: (kind, id, reason), at most 20 per (kind, reason), the groups sorted by kind then
    # reason, each in its rule's order (`turns.left_out`)
    excluded: tuple[tuple[str, str, str], ...]
    estimated_tokens: int
    plan_hash: str
    # I6: the rounded BM25 score of each included memory (aligned with `memories`), or None
    # for every memory under `certainty`.
    relevance: tuple[float | None, ...] = ()
    memory_order: str = "certainty"
    # I9: (kind, reason, count) of every entry left out, sorted by kind then reason
    excluded_counts: tuple[tuple[str, str, int], ...] = ()


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
    chosen, dropped = _select_history(current_tokens_and_memory, candidates, budget, policy)
    return tuple(c.id for c in chosen), tuple(c.id for c in reversed(dropped))


def _select_history(
    current_tokens_and_memory: int,
    candidates: Sequence[HistoryCandidate],
    budget: int,
    policy: str,
) -> tuple[list[HistoryCandidate], list[HistoryCandidate]]:
    """:func:`select_history` on the candidates themselves: the chosen oldest-first, the
    dropped newest-first (the order they were tried in)."""
    if policy not in HISTORY_POLICIES:
        raise ValidationError("history must be 'contiguous' or 'skip'.", field="history")
    available = budget - current_tokens_and_memory
    used = 0
    stopped = False
    chosen: list[HistoryCandidate] = []
    dropped: list[HistoryCandidate] = []
    for c in reversed(_unique_candidates(candidates)):
        cost = estimate_from_bytes(c.n_bytes)
        if not stopped and used + cost <= available:
            chosen.append(c)
            used += cost
        else:
            dropped.append(c)
            if policy == "contiguous":
                stopped = True
    chosen.reverse()
    return chosen, dropped


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


def _left_out_memories(left: LeftOut, memory_excluded: Sequence[tuple[str, str] | Exclusion]):
    """The resolver's and the projection's exclusions (a few thousand at 10,000 records), by
    reason — any reason: each listed by id, after the fill order under ``budget`` (I9). A
    resolution's own `excluded` (`memory.reasons.Exclusions`) is read for its counts and its
    first ids per reason, never built whole."""
    if hasattr(memory_excluded, "first") and hasattr(memory_excluded, "counts"):
        counts = memory_excluded.counts()
        for reason, ids in memory_excluded.first(left.limit).items():
            rank = UNRANKED if reason == REASON_BUDGET else 0
            left.ranked_counted(KIND_MEMORY, reason, ((i, rank) for i in ids), counts[reason])
        return
    try:
        ids = list(map(_exclusion_id, memory_excluded))
        reasons = list(map(_exclusion_reason, memory_excluded))
    except AttributeError:  # (id, reason) pairs among them
        pairs = [_exclusion_pair(item) for item in memory_excluded]
        ids, reasons = [p[0] for p in pairs], [p[1] for p in pairs]
    for reason in set(reasons):
        rank = UNRANKED if reason == REASON_BUDGET else 0
        left.by_id(KIND_MEMORY, reason, compress(ids, map(reason.__eq__, reasons)), rank)


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
    memory_excluded_parts: Sequence[Sequence[tuple[str, str] | Exclusion]] = (),
    resolver_version: str,
    history_candidates: Sequence[HistoryCandidate] | None = None,
    fetch_content: Callable[[list[str]], Mapping[str, str]] | None = None,
    pinned_keys: Collection[str] = frozenset(),
    recent: Sequence[str] | None = None,
    use_memories: bool = True,
    withheld: Collection[str] = frozenset(),
    label_terms: LabelTerms | None = None,
) -> Plan:
    """Build the prompt plan for one turn (I1, I3, I6). See the module docstring for the
    rules. ``memories`` are the projection's items in the I3 order; ``memory_excluded_parts``,
    when given, stands for ``memory_excluded`` as the parts it joins (the resolver's and the
    projection's, each read as it is); ``memory_excluded`` takes
    ``(id, reason)`` pairs or ``Exclusion`` objects from the resolver and projection.

    A long conversation need not be loaded whole: pass ``history_candidates`` (ids, seqs and
    byte lengths) instead of ``history`` and a ``fetch_content(ids)`` callback; only the
    messages the budget admits are then fetched. Both ways give the same plan.

    Under ``memory_order=relevance``, ``pinned_keys`` are the registry's pinned keys and
    ``recent`` may give the contents of the last ``QUERY_HISTORY`` messages before the
    current one (newest first); without it they are taken from ``history`` or fetched
    through ``fetch_content``; ``label_terms`` holds the terms of labels and keys from plan to
    plan (`turns.relevance.LabelTerms`). ``use_memories=False`` is the user's `use` switch
    (I8).

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
    left = LeftOut()  # I9: counts every entry left out, lists at most 20 per (kind, reason)
    relevance_on = params.memory_order == "relevance"

    first: dict[str, ProjectedMemory] = {}
    for pm in memories:
        first.setdefault(pm.record.id, pm)  # one item per id, the first given
    unique = list(first.values())

    # I8: with memory use off, every projected memory is excluded and the section is empty.
    scores: list[float | None] = [None] * len(unique)
    order = list(range(len(unique)))
    if not use_memories:
        left.by_id(KIND_MEMORY, REASON_MEMORY_OFF, (pm.record.id for pm in unique))
        order = []
    elif relevance_on and unique:
        if recent is None:
            recent = _recent_contents(current, history, history_candidates, fetch_content)
        order, rounded = relevance_order(
            unique,
            query_terms(current.content, recent[:QUERY_HISTORY]),
            pinned_keys,
            label_terms,
        )
        scores = list(rounded)

    # The memory section in its fill order, then what earlier steps left out (I9).
    chosen_memories, chosen_scores, memory_tokens = _fill_memories(
        [unique[index] for index in order],
        [scores[index] for index in order],
        memory_cap(params),
        left,
    )
    for part in memory_excluded_parts or (memory_excluded,):
        _left_out_memories(left, part)

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

    chosen_history = _history_section(
        current,
        history,
        history_candidates,
        fetch_content,
        room=(memory_tokens + current_tokens, budget, params.history),
        left=left,
    )
    left.ranked(KIND_MESSAGE, REASON_FORGOTTEN, held.items())

    estimated = memory_tokens + current_tokens + sum(t for _, t in chosen_history)
    assert estimated <= budget, "planner overran its budget"

    return Plan(
        boundary_seq=current.seq,
        current=current,
        current_tokens=current_tokens,
        history=chosen_history,
        memories=tuple(chosen_memories),
        memory_tokens=memory_tokens,
        excluded=left.listed(),
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
        excluded_counts=left.counts(),
    )


def _fill_memories(
    in_order: Sequence[ProjectedMemory],
    scores: Sequence[float | None],
    cap: int,
    left: LeftOut,
) -> tuple[list[ProjectedMemory], list[float | None], int]:
    """The memory section (I3, I6): the items in their fill order, each that does not fit in
    ``cap`` skipped and the filling going on with later ones; the skipped ones are left out
    for ``budget`` in that order (I9). Answers the chosen items, their scores and tokens."""
    chosen: list[ProjectedMemory] = []
    chosen_scores: list[float | None] = []
    over: list[str] = []
    tokens = 0
    for pm, score in zip(in_order, scores, strict=True):
        cost = estimate_memory(pm.label, pm.value)
        if tokens + cost <= cap:
            chosen.append(pm)
            chosen_scores.append(score)
            tokens += cost
        else:
            over.append(pm.record.id)
    left.ranked(KIND_MEMORY, REASON_BUDGET, zip(over, count()))
    return chosen, chosen_scores, tokens


def _history_section(
    current: PlanMessage,
    history: Sequence[PlanMessage],
    history_candidates: Sequence[HistoryCandidate] | None,
    fetch_content: Callable[[list[str]], Mapping[str, str]] | None,
    *,
    room: tuple[int, int, str],
    left: LeftOut,
) -> tuple[tuple[PlanMessage, int], ...]:
    """History (I1, I3): the boundary first, then the budget by size alone; ``room`` is the
    tokens already taken, the budget and the policy. The messages dropped for the budget are
    left out with their ``seq`` (I9). Answers the history oldest-first with its estimates."""
    taken, budget, policy = room
    if isinstance(history_candidates, InOrder):
        chosen, dropped, n_dropped = history_order.walk(
            history_candidates.before(current.seq), budget - taken, policy, left.limit
        )
    else:
        if history_candidates is None:
            eligible = _eligible_history(current, history)
            by_id = {m.id: m for m in eligible}
            candidates = [
                HistoryCandidate(m.id, m.seq, m.role, len(m.content.encode("utf-8")))
                for m in eligible
            ]
        else:
            candidates = [
                c for c in history_candidates if c.id != current.id and c.seq < current.seq
            ]
        chosen, dropped = _select_history(taken, candidates, budget, policy)
        n_dropped = len(dropped)
    if history_candidates is not None:
        if fetch_content is None:
            raise TypeError("history_candidates needs fetch_content")
        contents = fetch_content([c.id for c in chosen])
        by_id = {c.id: PlanMessage(c.id, c.seq, c.role, contents[c.id]) for c in chosen}
    left.ranked_counted(KIND_MESSAGE, REASON_BUDGET, ((c.id, c.seq) for c in dropped), n_dropped)
    return tuple((by_id[c.id], estimate_message(by_id[c.id].content)) for c in chosen)


def _split_withheld(
    current: PlanMessage, candidates: Sequence[HistoryCandidate], withheld: Collection[str]
) -> tuple[list[HistoryCandidate], dict[str, int]]:
    """F6: the candidates a plan may admit, and the withheld ones' ids with their ``seq``
    (before the turn boundary only: anything else is outside the plan, not excluded)."""
    if isinstance(candidates, InOrder) and not withheld:
        # In order, the withheld stay among the candidates: the walk passes over them.
        found = history_order.withheld(candidates)
        return candidates, {c.id: c.seq for c in found if c.seq < current.seq}
    kept: list[HistoryCandidate] = []
    held: dict[str, int] = {}
    for c in candidates:
        if c.withheld or c.id in withheld:
            if c.id != current.id and c.seq < current.seq:
                held[c.id] = min(c.seq, held.get(c.id, c.seq))
        else:
            kept.append(c)
    return kept, held


def _split_withheld_messages(
    current: PlanMessage, history: Sequence[PlanMessage], withheld: Collection[str]
) -> tuple[list[PlanMessage], dict[str, int]]:
    if not withheld:
        return list(history), {}
    kept = [m for m in history if m.id not in withheld]
    held: dict[str, int] = {}
    for m in history:
        if m.id in withheld and m.id != current.id and m.seq < current.seq:
            held[m.id] = min(m.seq, held.get(m.id, m.seq))
    return kept, held


def recent_ids(current_seq: int, candidates: Sequence[HistoryCandidate]) -> list[str]:
    """I6's query messages: the ids of the last ``QUERY_HISTORY`` history candidates before the
    current message that are not withheld (F6), newest first."""
    if isinstance(candidates, InOrder):
        return history_order.recent(candidates, current_seq, QUERY_HISTORY)
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
    if isinstance(history_candidates, InOrder):
        ids = history_order.recent(history_candidates, current.seq, QUERY_HISTORY)
    else:
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
