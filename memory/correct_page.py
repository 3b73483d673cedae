"""What the page for correcting one memory shows (SPEC §2 Correct): the memory, its label and
where it is remembered, and the form."""

from __future__ import annotations

from .presentation import ScopeNames


def correct_page(user, row, label: str, form, next_url: str) -> dict:
    """The correct page's context for `row` (a stored record of `user`)."""
    names = ScopeNames(user, [row.scope_id])
    return {
        "record": row,
        "label": label,
        "scope_words": names.words(row.scope_id),
        "form": form,
        "next": next_url,
    }
