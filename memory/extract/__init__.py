"""Rule-based fact extraction and question matching (SPEC §8).

Standard library only (like `memory.domain`): no Django, no clock, no I/O, so every rule is
testable as a table. The caller (turn creation, `POST /memory/remember`, `GET /memory/ask`)
turns the results into asserts/corrections and key lookups.

How a message is read
---------------------
1. Curly quotes and odd spaces are mapped one character to one character (so offsets stay
   those of the original text) and ```fenced code``` is blanked out (ignored).
2. The text is split into sentences (``.``/``!``/``?`` followed by a space or the end, ``;``,
   newlines; "Dr."/"St."-style abbreviations and "3.5" do not end a sentence), then into
   clauses at ", and" and "but". A comma or a bare " and " also splits, but only when the
   part after it is a fact on its own ("Don't call me boss, call me Sam"; "I like jazz and
   Priya works at Acme") — so "Portland, Oregon" and "Salt and Pepper" stay whole.
3. Each clause is matched against the rules below, most specific first; the first rule whose
   pattern matches *claims* the clause (so "I dislike being called boss" is only an avoided
   nickname and "don't call me boss" never becomes a preferred name), giving at most one
   extraction per clause. Rules are anchored at the start of the clause (after discourse
   markers such as "actually", "oh", "so", "please"), so subject-less clauses ("works at
   google"), negated ones ("I don't live in Boston anymore") and pronoun subjects yield
   nothing.

Decisions taken here (SPEC §8 is silent on them)
------------------------------------------------
- `correction` is only ever set on single-valued keys. For `many` keys (likes, dislikes,
  avoided nicknames) a new value is a new value slot, so "Actually, I like jazz" or "I like
  jazz, not rock" is a plain `likes` fact; correcting one value with another would be wrong.
- Correction markers: the word "actually" in the clause, a contrast tail (", not Harbor",
  "instead of …", "rather than …"), "renamed"/"changed … name to"/"new name", and — after
  "I renamed it / the basil plant" — any later naming of that thing in the same message.
- "it" is resolved to `last_named_key` (or to the thing named or renamed earlier in the same
  message). Only "it"/"its" is resolved, except right after a rename, where "he"/"she" also
  refer to the renamed thing ("I renamed my dog. He is Max now."). Without a "named/called"
  verb, "It is X" only counts as a name after a rename or with a contrast ("It is Marlowe now,
  not Harbor"), and X must look like a proper name (capitalised, unless the whole message is
  lowercase).
- `is_thing_name_key` excludes `user.*` and `people.*`: a person is never "it".
- Role values keep everything after the article ("a designer at Acme" → "designer at Acme");
  roles whose head noun is plainly not a job ("Boston is a great city", "Rex is a good boy")
  are refused. A one-word person name may be introduced by a relation ("my friend Priya works
  at Acme" → `people.priya.works_at`); "my sister works at Acme" yields nothing.
- "I like to read" keeps "to read"; "I hate it when you rush me" keeps "when you rush me";
  "I love you" / "I like it" yield nothing.
- Trailing time phrases are dropped from places and employers ("I moved to Seattle last
  year" → "Seattle"); so are trailing clauses ("… because", "… with my wife", "… as a
  designer").
- Identical facts repeated in one message are reported once (the first, with `correction`
  set if any repetition was a correction).
"""

from __future__ import annotations

import unicodedata
from dataclasses import replace

from .keys import NAME_KEY_SUFFIX, Extraction, is_thing_name_key
from .questions import ANSWERS, question_key
from .rules import _MARKERS, _run_clause, _State
from .text import _HARD_SPLIT, _MAX_SOFT_PIECES, _SOFT_SPLIT, _pieces, _prepare, _sentences, _trim

__all__ = [
    "ANSWERS",
    "NAME_KEY_SUFFIX",
    "Extraction",
    "extract",
    "is_thing_name_key",
    "question_key",
]

# ---------------------------------------------------------------------------------------------
# Public API


def extract(text: str, *, last_named_key: str | None = None) -> list[Extraction]:
    """Facts stated in a user message, in text order (SPEC §8).

    `last_named_key` is the key of the user's most recently named thing (e.g.
    "basil_plant.name"); it resolves "it" in "I renamed it. It is Marlowe now, not Harbor."
    A sentence whose "it" cannot be resolved yields nothing."""
    if not text:
        return []
    prepared = _prepare(text)
    referent = last_named_key if is_thing_name_key(last_named_key) else None
    state = _State(referent=referent, renaming=False)
    found: list[Extraction] = []
    for s_start, s_end in _sentences(prepared):
        for h_start, h_end in _pieces(prepared, s_start, s_end, _HARD_SPLIT):
            pieces = _pieces(prepared, h_start, h_end, _SOFT_SPLIT)
            if len(pieces) > _MAX_SOFT_PIECES:
                pieces = [(h_start, h_end)]
            cur_start, cur_end = pieces[0]
            for p_start, p_end in pieces[1:]:
                _, after_cur = _run_clause(prepared[cur_start:cur_end], state, prepared)
                cand, _ = _run_clause(prepared[p_start:p_end], after_cur, prepared)
                # Split when the part after the comma/"and" is a fact of its own, unless
                # what precedes is only a marker ("Actually, my dog's name is Max").
                if cand is not None and not _only_markers(prepared[cur_start:cur_end]):
                    state = _emit(found, prepared, cur_start, cur_end, state)
                    cur_start = p_start
                cur_end = p_end
            state = _emit(found, prepared, cur_start, cur_end, state)
    return _dedupe(found)


def _only_markers(clause: str) -> bool:
    s = " ".join(clause.split())
    m = _MARKERS.match(s)
    return not s or (m is not None and m.end() == len(s))


def _emit(found: list[Extraction], text: str, start: int, end: int, state: _State) -> _State:
    start, end = _trim(text, start, end)
    if start >= end:
        return state
    cand, state = _run_clause(text[start:end], state, text)
    if cand is not None:
        found.append(Extraction(cand.key, cand.value, cand.correction, (start, end)))
    return state


def _dedupe(found: list[Extraction]) -> list[Extraction]:
    seen: dict[tuple[str, str], int] = {}
    out: list[Extraction] = []
    for item in found:
        slot = (item.key, unicodedata.normalize("NFC", item.value).strip().casefold())
        if slot in seen:
            index = seen[slot]
            if item.correction and not out[index].correction:
                out[index] = replace(out[index], correction=True)
            continue
        seen[slot] = len(out)
        out.append(item)
    return out
