"""`GET /memory/ask` (SPEC §10, C5): a simple question in words answered from the user's
own-scope memories active now, never one a forget withholds (F7.2)."""

from __future__ import annotations

from dataclasses import dataclass

from conversations.selectors import load_context

from .domain import REASON_WITHHELD, MemoryRecord
from .extract import question_key
from .selectors.resolution import ContextResolution


@dataclass(frozen=True)
class Answer:
    """`understood`: the question was recognised; `answer` and `record` are None when it was
    not or when nothing is remembered for it. A many-valued key answers all its values, newest
    first; `record` is the newest."""

    understood: bool
    answer: str | None = None
    record: MemoryRecord | None = None


def ask(user, question: str) -> Answer:
    key = question_key(question)
    if key is None:
        return Answer(understood=False)
    result = ContextResolution(load_context({"user": user.username}), [key])
    # F7.2: a memory a forget withholds in the user's own context is not answered.
    withheld = {e.id for e in result.projection.excluded if e.reason == REASON_WITHHELD}
    active = sorted(
        (r for r in result.resolution.active if r.key == key and r.id not in withheld),
        key=lambda r: (-r.valid_from.timestamp(), r.id),
    )
    if not active:
        return Answer(understood=True)
    answer = ", ".join(r.value for r in active) if result.registry.is_many(key) else active[0].value
    return Answer(understood=True, answer=answer, record=active[0])
