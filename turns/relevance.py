"""Relevance (SPEC I6): Okapi BM25 over a memory's label, key and value against the current
message and the two before it. Standard library only; the planner orders memories with it
under `memory_order=relevance`."""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import accumulate

from memory.domain import ProjectedMemory
from turns.stopwords import STOPWORDS

# I6: Okapi BM25 parameters and the messages before the current one that join the query.
BM25_K1 = 1.2
BM25_B = 0.75
QUERY_HISTORY = 2

# Runs of characters that `str.isalnum` accepts: every letter and digit, plus the few other
# numeric characters (categories Nl and No) that `_letters_and_digits` splits off again.
_ALNUM_RUN = re.compile(r"[^\W_]+")
# ASCII text is its own NFKC form, its casefold is `lower()`, and its letters and digits are
# [a-z0-9] once lowered: the same terms, without the Unicode work.
_ASCII_RUN = re.compile(r"[a-z0-9]+")


def _letters_and_digits(run: str) -> list[str]:
    """Split a run of alphanumeric characters on those that are neither a letter (L*) nor a
    decimal digit (Nd): `isalnum` also accepts other numerics such as Roman numerals."""
    if run.isascii() or run.isalpha():
        return [run]
    pieces: list[str] = []
    start = 0
    for i, char in enumerate(run):
        if not (char.isalpha() or char.isdecimal()):
            if i > start:
                pieces.append(run[start:i])
            start = i + 1
    if start < len(run):
        pieces.append(run[start:])
    return pieces


def terms(text: str) -> list[str]:
    """I6: the terms of a text, in order, repeats kept. NFKC, then casefold, then split on
    every character that is not a letter or a decimal digit; terms of one character and
    stopwords are dropped."""
    if text.isascii():
        return [t for t in _ASCII_RUN.findall(text.lower()) if len(t) > 1 and t not in STOPWORDS]
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [
        term
        for run in _ALNUM_RUN.findall(folded)
        for term in _letters_and_digits(run)
        if len(term) > 1 and term not in STOPWORDS
    ]


# ASCII terms, one-character ones left out: a run of two or more is always matched whole.
_ASCII_TERM = re.compile(r"[a-z0-9]{2,}")
_is_stopword = STOPWORDS.__contains__


def _counted_terms(text: str) -> tuple[int, list[str]]:
    """``(len(terms(text)), candidates)``: the number of terms of ``text`` and a list holding
    every one of them (repeats kept), for ASCII text with its stopwords too — all BM25 needs,
    since a query holds no stopword. Cheaper than ``terms`` on the hot path."""
    if text.isascii():
        runs = _ASCII_TERM.findall(text.lower())
        return len(runs) - sum(map(_is_stopword, runs)), runs
    found = terms(text)
    return len(found), found


class LabelTerms:
    """The terms of each memory's label and key, by record id, for a caller that keeps them
    from plan to plan (the turn's shell holds one per process, `turns.storage.LABEL_TERMS`):
    labels and keys recur, and a held entry is used only for the label and key it was made
    of (F7.6: keyed by ids, never by a text; values are never held). At most `size` entries;
    `clear` lets them all go (a forget may have erased what they hold)."""

    def __init__(self, size: int = 16_384):
        self.size = size
        self._held: dict[str, tuple[str, str, tuple[int, frozenset[str], tuple[str, ...]]]] = {}

    def of(self, pm: ProjectedMemory) -> tuple[int, frozenset[str], tuple[str, ...]]:
        """The memory's label and key terms: their count, their set and their sequence."""
        record_id = pm.record.id
        held = self._held.get(record_id)
        if held is not None and held[0] == pm.label and held[1] == pm.key:
            return held[2]
        made = label_and_key_terms(pm)
        if len(self._held) >= self.size:
            self._held.clear()
        self._held[record_id] = (pm.label, pm.key, made)
        return made

    def clear(self) -> None:
        self._held.clear()

    def held_texts(self) -> list[str]:
        """Every text held (what a test walks after a forget)."""
        return [
            text
            for label, key, (_, _, found) in list(self._held.values())
            for text in (label, key, *found)
        ]


def label_and_key_terms(pm: ProjectedMemory) -> tuple[int, frozenset[str], tuple[str, ...]]:
    """The terms of a memory's label and key: their count, their set and their sequence."""
    found = (*terms(pm.label), *terms(pm.key))
    return len(found), frozenset(found), found


def document_terms(pm: ProjectedMemory) -> list[str]:
    """I6: a memory's document is the terms of its label, value and key
    (``basil_plant.name`` → basil, plant, name)."""
    return [*terms(pm.label), *terms(pm.value), *terms(pm.key)]


def query_terms(current: str, recent: Iterable[str] = ()) -> list[str]:
    """I6: the current message's terms plus those of the messages before it (the caller
    passes the last ``QUERY_HISTORY``)."""
    out = terms(current)
    for text in recent:
        out.extend(terms(text))
    return out


def bm25_scores(query: Iterable[str], documents: Sequence[Sequence[str]]) -> list[float]:
    """I6: Okapi BM25 of the query against each document, rounded to 6 decimals.

    score(d) = Σ over the query's distinct terms t of
    idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · |d| / avgdl)), with k1 = 1.2, b = 0.75,
    idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5)), tf the count of t in d, |d| its number
    of terms, avgdl the mean |d|, N the number of documents and n(t) the number containing t.
    The terms are summed in sorted order, so the result never depends on input order. With
    no query terms, or documents without terms, every score is 0."""
    distinct = sorted(set(query))
    wanted = frozenset(distinct).__contains__
    matched: dict[int, tuple[int, list[str]]] = {}
    for index, document in enumerate(documents):
        found = list(filter(wanted, document))
        if found:
            matched[index] = (len(document), found)
    return _bm25(distinct, len(documents), sum(map(len, documents)), matched)


def _bm25(
    distinct: list[str], n_docs: int, total: int, matched: Mapping[int, tuple[int, list[str]]]
) -> list[float]:
    """BM25 of `n_docs` documents of `total` terms in all, from the documents that hold a
    query term: index → (their length, their occurrences of the query's terms, repeats kept).
    Every other document scores 0. ``distinct`` is the sorted distinct query terms."""
    scores = [0.0] * n_docs
    if not distinct or not total or not matched:
        return scores
    counts: dict[int, dict[str, int]] = {}
    containing = dict.fromkeys(distinct, 0)
    for index, (_, found_terms) in matched.items():
        found: dict[str, int] = {}
        for term in found_terms:
            found[term] = found.get(term, 0) + 1
        for term in found:
            containing[term] += 1
        counts[index] = found
    idf = {t: math.log(1 + (n_docs - n + 0.5) / (n + 0.5)) for t, n in containing.items()}
    avgdl = total / n_docs
    for index, found in counts.items():
        length = matched[index][0]
        score = 0.0
        for term in distinct:
            tf = found.get(term)
            if tf:
                score += (
                    idf[term]
                    * tf
                    * (BM25_K1 + 1)
                    / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl))
                )
        scores[index] = round(score, 6)
    return scores


_ALNUM_ASCII = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _occurrences(text: str, term: str) -> list[int]:
    """Where ``term`` occurs in lowered ASCII ``text`` as a whole term: a maximal run of
    [a-z0-9] equal to it (found with `str.find`, then its neighbours checked)."""
    out: list[int] = []
    find, size, end = text.find, len(term), len(text)
    at = find(term)
    while at >= 0:
        after = at + size
        if (at == 0 or text[at - 1] not in _ALNUM_ASCII) and (
            after == end or text[after] not in _ALNUM_ASCII
        ):
            out.append(at)
        at = find(term, after)
    return out


def _memory_scores(
    memories: Sequence[ProjectedMemory], distinct: list[str], label_terms: LabelTerms | None
) -> list[float]:
    """`bm25_scores` of the memories' documents (:func:`document_terms`) without building
    them: BM25 reads only the total number of terms, and the length and query-term
    occurrences of the documents that hold a query term. Labels and keys are looked up in
    `label_terms` when the caller keeps them; when every value is ASCII, the values' terms
    are counted in one pass over their concatenation and the query's terms found there by
    one pattern, so per memory only a lookup remains. (A test holds the result equal to
    `bm25_scores`.)"""
    query_set = frozenset(distinct)
    wanted, disjoint = query_set.__contains__, query_set.isdisjoint
    fixed = list(map(label_and_key_terms if label_terms is None else label_terms.of, memories))
    total = sum(f[0] for f in fixed)
    matched_terms: dict[int, list[str]] = {
        index: list(filter(wanted, fixed[index][2]))
        for index in [i for i, f in enumerate(fixed) if not disjoint(f[1])]
    }
    values = [pm.value for pm in memories]
    joined = "\n".join(values)
    value_lengths: dict[int, int] = {}
    if joined.isascii():
        lowered = joined.lower()  # ASCII: the NFKC casefold, and of the same length
        runs = _ASCII_TERM.findall(lowered)
        total += len(runs) - sum(map(_is_stopword, runs))
        # Where each value starts in `lowered` (one separator after each).
        starts = list(accumulate(map((1).__add__, map(len, values[:-1])), initial=0))
        for term in distinct:
            if term.isascii():
                for at in _occurrences(lowered, term):
                    matched_terms.setdefault(bisect_right(starts, at) - 1, []).append(term)
    else:
        for index, value in enumerate(values):
            length, candidates = _counted_terms(value)
            total += length
            value_lengths[index] = length
            if not disjoint(candidates):
                matched_terms.setdefault(index, []).extend(filter(wanted, candidates))
    matched = {}
    for index, found_terms in matched_terms.items():
        length = value_lengths.get(index)
        if length is None:
            length = _counted_terms(values[index])[0]
        matched[index] = (fixed[index][0] + length, found_terms)
    return _bm25(distinct, len(memories), total, matched)


def relevance_order(
    memories: Sequence[ProjectedMemory],
    query: Iterable[str],
    pinned_keys: Collection[str],
    label_terms: LabelTerms | None = None,
) -> tuple[list[int], list[float]]:
    """I6: the fill order (indexes into ``memories``, which are in the I3 order) and each
    memory's rounded score (:func:`bm25_scores` of their documents): pinned keys first, then
    score highest first, then the I3 order. `label_terms`: the caller's held terms of labels
    and keys (`LabelTerms`), else they are made here."""
    distinct = sorted(set(query))
    n = len(memories)
    scores = _memory_scores(memories, distinct, label_terms) if distinct and n else [0.0] * n
    # Two stable sorts (score, then pinned first) keep the I3 order among equals, with keys
    # that are plain floats and booleans rather than a tuple per memory.
    pinned = frozenset(pinned_keys)
    order = sorted(range(n), key=[-s for s in scores].__getitem__)
    if pinned:
        unpinned = [pm.key not in pinned for pm in memories]
        order.sort(key=unpinned.__getitem__)
    return order, scores
