"""What the pages show of the memories a forget stops using (SPEC F7.2, F7.3): the forget
confirmation pages — one memory, or several chosen at once — say beforehand how many messages
the companion will stop seeing and which other memories it will stop using, each with a way to
forget it too; the memories page and a memory's own page show a withheld memory, value and
all, with a notice that the companion no longer uses it and which forget did it (that forget's
label, never its value).

Presenters are plain functions from what the services and selectors answer to what a template
shows; the reads are bulk (one query for a page's notices, whatever its size)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.urls import reverse

from config.pages import Notice, day, when

from . import forgetting, notices
from .presentation import ScopeNames, Wording, plain_label, told_by, told_by_words
from .selectors.pages import forgotten_entries, key_templates
from .selectors.records import registry
from .withholding import memories_withheld_by


@dataclass(frozen=True)
class OtherMemory:
    """Another memory a forget page names: its label and value (the page is the user's own),
    and the address of its own forget page."""

    id: str
    label: str
    value: str
    forget_url: str


def other_memories(records: Iterable, labels: Mapping[str, str]) -> list[OtherMemory]:
    """`records` (domain records) as a forget page lists them, in their order."""
    return [
        OtherMemory(
            id=r.id,
            label=labels.get(r.key) or plain_label(r.key),
            value=r.value,
            forget_url=reverse("memory:forget", args=[r.id]),
        )
        for r in records
    ]


@dataclass(frozen=True)
class ForgetSelectedPage:
    """The bulk confirmation page (F7.3): the chosen memories as cards, and what forgetting
    them would also do."""

    items: list[dict]
    withheld: int
    withheld_memories: list[OtherMemory]


def forget_selected_page(user, remembered, chosen: list) -> ForgetSelectedPage:
    """The bulk "Forget selected…" confirmation page for `chosen` (domain records among
    `remembered.active`): each card, then the distinct messages the companion would stop
    seeing and the other memories it would stop using (`forgetting.forget_selected_preview`)."""
    names = ScopeNames(user, {r.scope_id for r in chosen})
    words = Wording(remembered.registry.labels, key_templates({r.key for r in chosen}))
    items = sorted(
        (
            {
                "record": r,
                "label": words.label(r.key),
                "sentence": words.sentence(r.key, r.value),
                "scope_words": names.words(r.scope_id),
                "told_by": told_by(r),
            }
            for r in chosen
        ),
        key=lambda item: (item["label"].casefold(), item["record"].id),
    )
    preview = forgetting.forget_selected_preview(
        records=chosen, active=remembered.active, user=user
    )
    return ForgetSelectedPage(
        items=items,
        withheld=preview.withheld,
        withheld_memories=other_memories(preview.withheld_memories, remembered.registry.labels),
    )


# ---------------------------------------------------------------------------------------------
# The notice on a withheld memory


@dataclass(frozen=True)
class WithheldNotice:
    """F7.2 on a memory's card or page: the companion no longer uses it, because of which
    forgets (their labels and days, never a value)."""

    text: str
    forgets: tuple[str, ...]  # the forgotten memories' labels, oldest forget first


def withheld_notice(
    tombstones: list, labels: Mapping[str, str], names: ScopeNames
) -> WithheldNotice:
    """The notice for a memory withheld by `tombstones` (oldest forget first): each forget by
    its label, who asked, where (when narrower than everywhere) and when."""
    said = []
    for tombstone in tombstones:
        label = labels.get(tombstone.key) or plain_label(tombstone.key)
        kind = tombstone.scope_id.partition(":")[0]
        where = "" if kind in ("*", "user") else f" {names.words(tombstone.scope_id)}"
        who = (
            "support forgot on your behalf"
            if tombstone.forgotten_by == "support"
            else ("you asked it to forget")
        )
        said.append(f"“{label}”, which {who}{where} on {day(tombstone.forgotten_at)}")
    return WithheldNotice(
        text=f"The companion no longer uses this: it holds words of {', and of '.join(said)}. "
        "It stays here for you; forget it too if it should go.",
        forgets=tuple(labels.get(t.key) or plain_label(t.key) for t in tombstones),
    )


def withheld_notices(
    user, record_ids: Iterable[str], labels: Mapping[str, str], names: ScopeNames
) -> dict[str, WithheldNotice]:
    """The notice of each withheld memory among `record_ids` (one query)."""
    return {
        rid: withheld_notice(tombstones, labels, names)
        for rid, tombstones in memories_withheld_by(user=user, memory_ids=record_ids).items()
    }


def forget_page(user, row, label: str) -> dict:
    """What the confirmation page for forgetting `row` (a stored record) shows besides its
    form (F6, F7.3): the memory as a sentence and where it is remembered, how many messages
    the companion will stop seeing (here and everywhere), the other memories it will stop
    using, and those that mention the value but stay in use (another scope's)."""
    words = Wording({row.key: label}, key_templates([row.key]))
    preview = forgetting.forget_preview(record_id=row.pk, user=user)
    withheld_ids = {r.id for r in preview.withheld_memories}
    others = [r for r in preview.mentioned_in if r.id not in withheld_ids]
    labels = registry({r.key for r in [*preview.withheld_memories, *others]}).labels
    return {
        "sentence": words.sentence(row.key, row.value),
        "withheld": preview.withheld,
        "withheld_everywhere": preview.withheld_everywhere,
        "withheld_memories": other_memories(preview.withheld_memories, labels),
        "withheld_memories_everywhere": preview.withheld_memories_everywhere,
        "mentioned": other_memories(others, labels),
        "scope_words": ScopeNames(user, [row.scope_id]).words(row.scope_id),
        "user_scope": row.scope_kind == "user",
    }


def forget_confirm_page(user, row, label: str, many: bool, form, next_url: str) -> dict:
    """The context of the confirmation page for forgetting `row`: what `forget_page` says, the
    memory and who told it, and the form."""
    return {
        **forget_page(user, row, label),
        "record": row,
        "told_by": told_by_words(row.told_by_name, row.recorded_at)
        if row.told_by_connection
        else "",
        "label": label,
        "many": many,
        "form": form,
        "next": next_url,
    }


# ---------------------------------------------------------------------------------------------
# Forget several at once


def chosen_of(remembered, posted: list) -> tuple[list, int]:
    """The memories `posted` (the ticked cards' ids) names among those remembered now, in the
    order posted and each once, and how many distinct posted values were left out (an old
    card, another user's id, not an id at all)."""
    by_id = {r.id: r for r in remembered.active}
    posted = [value for value in posted if isinstance(value, str)]
    chosen = [by_id[value] for value in dict.fromkeys(posted) if value in by_id]
    return chosen, len(set(posted)) - len(chosen)


def forgotten_selected(remembered, chosen: list, tombstones) -> Notice:
    """The message after forgetting `chosen`: their distinct labels A–Z and the messages the
    forgets withhold, each counted once."""
    labels = sorted(
        {remembered.registry.labels.get(r.key) or plain_label(r.key) for r in chosen},
        key=str.casefold,
    )
    return notices.forgotten_selected(len(chosen), labels, forgetting.withheld_total(tombstones))


# ---------------------------------------------------------------------------------------------
# What was forgotten


def forgotten_page(user) -> dict:
    """F1/F4: the forgotten page's rows — the slot and scope, never the value — who asked, and
    the address of each "learn it again"."""
    entries = forgotten_entries(user)
    keys = registry()
    names = ScopeNames(user, {t.scope_id for t in entries})
    root = reverse("memory:forgotten")
    rows = [
        {
            "id": t.id,
            "anchor": f"t-{t.id}",
            "learn_again": f"{root}{t.id}/learn-again",
            "label": keys.labels.get(t.key) or plain_label(t.key),
            "key": t.key,
            "scope_words": names.forget_words(t.scope_id),
            "one_value": t.one_value,
            "many": keys.is_many(t.key),
            "forgotten_on": when(t.forgotten_at),
            "by_support": t.forgotten_by == "support",
        }
        for t in entries
    ]
    return {"rows": rows}
