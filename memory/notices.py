"""The words each memory action leaves (SPEC §1–§5): a page view calls the service, then asks
here what to tell the user and beside which card (`config.pages.Notice`). A memory is named by
its label, never by its value: a value does not belong in a cookie or a session."""

from __future__ import annotations

from django.contrib import messages

from config.pages import Notice

from .presentation import ScopeNames

# The anchor of the switches' card on the memories page: it shows its own message.
SWITCHES_ANCHOR = "switches"


def card(record_id) -> str:
    """The anchor of a memory's card on the memories page."""
    return f"m-{record_id}"


# ---------------------------------------------------------------------------------------------
# The switches (I8)


def switches_unread() -> Notice:
    return Notice(
        messages.ERROR, "Those switches could not be read; nothing changed.", SWITCHES_ANCHOR
    )


def switches_set(before, after) -> Notice:
    """What changed between the switches `before` and `after`; I8: neither switch deletes
    anything, which reassures only when something was turned off."""
    if after == before:
        return Notice(messages.INFO, "Nothing changed.", SWITCHES_ANCHOR)
    learning = (
        "learns from your messages" if after.learn else "learns nothing new from your messages"
    )
    using = (
        "uses these memories in conversations"
        if after.use
        else "uses none of these memories in conversations"
    )
    turned_off = (before.learn and not after.learn) or (before.use and not after.use)
    return Notice(
        messages.SUCCESS,
        f"Saved: the companion {learning} and {using}."
        + (" Nothing was deleted." if turned_off else ""),
        SWITCHES_ANCHOR,
    )


# ---------------------------------------------------------------------------------------------
# Confirm, correct, no longer true and its undo (§2, W10)


def confirm_conflict() -> Notice:
    return Notice(
        messages.ERROR,
        "That memory is no longer current, so there was nothing to confirm. "
        "The list shows what is remembered now.",
    )


def confirmed(result, label: str) -> Notice:
    if result.outcome == "unchanged":
        return Notice(
            messages.INFO,
            f"Nothing changed: “{label}” was already confirmed by you.",
            card(result.record.id),
        )
    return Notice(
        messages.SUCCESS,
        f"Confirmed “{label}”. It now counts as something you said yourself.",
        card(result.record.id),
    )


def correct_conflict(label: str) -> Notice:
    return Notice(
        messages.ERROR,
        f"“{label}” changed in the meantime, so nothing was corrected. "
        "The list shows what is remembered now.",
    )


def corrected(result, label: str) -> Notice:
    """A correction's outcome: blocked by a forget, the same value again, the value the memory
    already held (a confirm), or a new value."""
    if result.record is None:
        return Notice(
            messages.ERROR,
            f"Nothing was saved for “{label}”: you had asked the companion to forget that value.",
        )
    anchor = card(result.record.id)
    if result.outcome == "unchanged":
        return Notice(
            messages.INFO,
            f"Nothing changed: “{label}” already holds that value, as you said it.",
            anchor,
        )
    if result.record.authority == "user-confirmed":
        return Notice(
            messages.SUCCESS,
            f"Confirmed “{label}”: the value you saved is the one "
            "remembered. It now counts as something you said yourself.",
            anchor,
        )
    return Notice(
        messages.SUCCESS,
        f"Corrected “{label}”. The old value will not be used again.",
        anchor,
    )


def retract_conflict(label: str) -> Notice:
    return Notice(
        messages.ERROR,
        f"“{label}” was forgotten, so there is nothing to mark as no longer true.",
    )


def retracted(label: str, record_id) -> Notice:
    return Notice(
        messages.SUCCESS,
        f"“{label}” is no longer treated as true. Its history keeps the old value, "
        "and older messages will not bring it back.",
        card(record_id),
    )


def restore_conflict(label: str, exc) -> Notice:
    return Notice(messages.ERROR, f"Nothing to undo for “{label}”: {exc.detail}")


def restored(result, label: str) -> Notice:
    if result.record is None:
        return Notice(
            messages.ERROR,
            f"“{label}” could not come back: you had asked the companion to forget it.",
        )
    return Notice(
        messages.SUCCESS,
        f"“{label}” is remembered again, as something you said yourself, from now "
        "on. Its history shows the time it was not.",
        card(result.record.id),
    )


# ---------------------------------------------------------------------------------------------
# Forget, forget selected and learn again (F1–F6)


def withheld_words(n: int, what: str = "it") -> str:
    """F6 in the success message: how many messages the companion stops seeing."""
    if n == 0:
        return ""
    return f", the companion no longer sees the {n} message{'' if n == 1 else 's'} that held {what}"


def already_forgotten(label: str) -> Notice:
    return Notice(messages.INFO, f"“{label}” was already forgotten.")


def forgotten(user, row, label: str, everywhere: bool, tombstone) -> Notice:
    """`row` forgotten in its scope or everywhere, with the messages its forget withholds."""
    where = "everywhere" if everywhere else ScopeNames(user, [row.scope_id]).words(row.scope_id)
    return Notice(
        messages.SUCCESS,
        f"Forgotten: “{label}” ({where}). The value is erased"
        f"{withheld_words(tombstone.withheld_messages)}, and old "
        "messages will not bring it back.",
        card(row.pk),
    )


def nothing_chosen() -> Notice:
    return Notice(
        messages.ERROR,
        "Nothing was forgotten: choose at least one memory that is remembered now.",
    )


def forgotten_selected(n: int, labels: list[str], withheld: int) -> Notice:
    """`n` memories forgotten at once: how many, their distinct labels (A–Z) and the messages
    withheld."""
    return Notice(
        messages.SUCCESS,
        f"Forgotten: {n} memor{'y' if n == 1 else 'ies'} "
        f"({', '.join(f'“{label}”' for label in labels)}). The values are "
        f"erased{withheld_words(withheld, 'them')}, "
        "and old messages will not bring them back.",
    )


def learn_again(label: str) -> Notice:
    return Notice(
        messages.SUCCESS,
        f"The companion may learn “{label}” again from what you say. "
        "The erased value does not come back by itself.",
    )
