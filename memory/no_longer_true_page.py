"""What the "no longer true" page shows (SPEC W10): the memories the user marked no longer true
while nothing else is remembered in their place, a page at a time, each with its label,
sentence, scope, day and the address its undo posts to. The reads are bulk."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Paginator
from django.urls import reverse

from config.pages import when

from .domain import MemoryRecord as DomainRecord
from .list_page import PAGE_SIZE
from .presentation import ScopeNames, Sentence, Wording, told_by
from .selectors.pages import key_templates, no_longer_true
from .selectors.resolution import remembered_now


@dataclass(frozen=True)
class RetractedRow:
    record: DomainRecord
    label: str
    sentence: Sentence | None
    scope_words: str
    retracted_on: str
    base: str
    told_by: str = ""  # M3: "told by <name> on <day>" for a value an assistant stored

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def anchor(self) -> str:
        return f"m-{self.record.id}"


def no_longer_true_page(user, page_number) -> dict:
    """The page's context: page `page_number` (as asked; Django's paginator reads it) of what
    `user` marked no longer true."""
    remembered = remembered_now(user)
    retracted = no_longer_true(remembered)
    paginator = Paginator(retracted, PAGE_SIZE)
    page = paginator.get_page(page_number)
    names = ScopeNames(user, {r.scope_id for r in page.object_list})
    words = Wording(remembered.registry.labels, key_templates({r.key for r in page.object_list}))
    root = reverse("memory:list")
    rows = [
        RetractedRow(
            r,
            words.label(r.key),
            words.sentence(r.key, r.value),
            names.words(r.scope_id),
            when(r.retracted_at),
            f"{root}{r.id}/",
            told_by(r),
        )
        for r in page.object_list
    ]
    return {
        "rows": rows,
        "page": page,
        "paginated": paginator.num_pages > 1,
        "list_url": root,
        "page_range": list(paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)),
    }
