"""The memories page's read (SPEC §1, §4, §5, I8): what is remembered now as cards, filtered by
character or certainty, searched, sorted newest first or A–Z and grouped by character, one page
of them with everything a card shows (its sentence, scope, certainty and provenance). The view
(`memory.views.memory_list_view`) hands it the page's address, the search term kept in the session
and the messages placed at cards, and renders what it answers.

Reads are bulk, so the page costs the same number of queries for five memories or five
thousand. The place of a card that was just marked no longer true or forgotten stays on the
page with its message: the first as a card with an undo, the second as a skeleton without its
value (F2)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.http import QueryDict
from django.urls import reverse
from django.utils.http import urlencode

from config.pages import PagePresenter
from conversations.scopes import SCOPE_NARROWNESS

from .domain import USER_AUTHORITIES, normalise_value
from .domain import MemoryRecord as DomainRecord
from .forget_pages import WithheldNotice, withheld_notices
from .forms import MemoryFilterForm
from .notices import SWITCHES_ANCHOR  # the switches' card shows its own message
from .presentation import (
    CERTAINTY,
    Provenance,
    ScopeNames,
    Sentence,
    Wording,
    certainty,
    original_of,
    provenance,
    source_messages,
)
from .selectors.pages import key_templates, memory_skeletons, no_longer_true
from .selectors.resolution import Remembered, remembered_now
from .switches import memory_settings_of

PAGE_SIZE = 25
# I8: each card's line on use in conversations while `use` is off.
NOT_USED_NOW = "Not used in conversations now: you turned memory use off."


@dataclass
class MemoryRow:
    """One card of the memories page: a remembered value, or the place of one that was just
    marked no longer true (`retracted`) or forgotten (`forgotten`, no value)."""

    id: str
    key: str
    scope_id: str
    label: str
    group: str | None
    recorded_at: datetime
    order: tuple
    kind: str = "memory"
    record: DomainRecord | None = None
    sentence: Sentence | None = None
    scope_words: str = ""
    certainty: str = ""
    certainty_label: str = ""
    certainty_help: str = ""
    provenance: Provenance | None = None
    confirmable: bool = False
    restorable: bool = False
    base: str = ""  # this memory's page URL prefix, `/memories/<id>/`
    notices: list = field(default_factory=list)
    withheld: WithheldNotice | None = None  # F7.2: a forget stops the companion using it

    @property
    def anchor(self) -> str:
        return f"m-{self.id}"

    @property
    def value(self) -> str | None:
        return self.record.value if self.record is not None else None


@dataclass(frozen=True)
class Filters:
    """What a valid filter form asks for: a character's group (`everywhere` or a slug), a
    certainty, an order, and the search term as compared (normalised)."""

    only: str = ""
    certainty: str = ""
    sort: str = "newest"
    needle: str = ""

    @classmethod
    def of(cls, form: MemoryFilterForm, term: str) -> Filters:
        if not form.is_valid():
            return cls(needle=normalise_value(term))
        return cls(
            form.cleaned_data["character"] or "",
            form.cleaned_data["certainty"] or "",
            form.cleaned_data["sort"] or "newest",
            normalise_value(term),
        )

    def keeps(self, group: str | None, level: str, texts: tuple[str, ...]) -> bool:
        if self.only == "everywhere" and group is not None:
            return False
        if self.only and self.only != "everywhere" and group not in (None, self.only):
            return False
        if self.certainty and level != self.certainty:
            return False
        return not self.needle or any(self.needle in normalise_value(t) for t in texts)


@dataclass
class MemoryListPage(PagePresenter):
    """One page of the memories page's cards, in their groups, with the filter form and the
    addresses the page links to; `unplaced`: the messages of cards not on this page."""

    form: MemoryFilterForm
    term: str
    filters: Filters
    paginator: Paginator
    page: Page
    groups: list[dict]
    here: str  # this page's address (filters and page number, never the search term)
    params: QueryDict
    anything: bool  # something is remembered at all, whatever the filter
    forgotten_before: bool
    no_longer_true: int
    unplaced: list

    # `unplaced`: the view shows them with the messages of no card.
    not_shown = ("term", "filters", "paginator", "params", "unplaced")

    def derived(self) -> dict:
        return {
            "paginated": self.paginator.num_pages > 1,
            "page_range": list(
                self.paginator.get_elided_page_range(self.page.number, on_each_side=2, on_ends=1)
            ),
            "page_query": self.params.urlencode(),
            "query": self.term,
            "filtered": bool(self.term or self.filters.only or self.filters.certainty),
            "total": self.paginator.count,
            "here_query": urlencode({"next": self.here}),
        }


def _order(
    sort: str, label: str, scope_kind: str, value: str, recorded_at: datetime, id_: str
) -> tuple:
    if sort == "az":
        return (label.casefold(), SCOPE_NARROWNESS[scope_kind], normalise_value(value), id_)
    return (-recorded_at.timestamp(), label.casefold(), id_)


def _group_title(names: ScopeNames, slug: str | None, *, use: bool = True) -> tuple[str, str]:
    """A group's heading and what it says of use in conversations; with `use` off (I8) none
    is used now, whoever they are kept for."""
    if slug is None:
        if not use:
            return (
                "Everywhere",
                "Kept for every companion; none is used in conversations while memory use is off.",
            )
        return "Everywhere", "Every companion may use these, in every conversation."
    name = names.character_name(slug)
    if not use:
        return (
            f"With {name}",
            f"Kept for {name} only; none is used in conversations while memory use is off.",
        )
    return f"With {name}", f"Only {name} uses these (some only in one conversation or scene)."


def _group_anchor(slug: str | None) -> str:
    return "g-everywhere" if slug is None else f"g-{slug}"


def _filter_query(form: MemoryFilterForm) -> QueryDict:
    """The page's address parameters of a valid filter (never the search term)."""
    query = QueryDict(mutable=True)
    if form.is_bound and form.is_valid():
        for name in ("character", "certainty", "sort"):
            if form.cleaned_data.get(name):
                query[name] = form.cleaned_data[name]
    return query


def _card(
    item, group: str | None, words: Wording, sort: str, *, scope_kind: str, value: str, **extra
) -> MemoryRow:
    """A card of the page in its place: a record's, or a forgotten skeleton's (no value),
    labelled and ordered by `sort` (`_order`)."""
    label = words.label(item.key)
    order = _order(sort, label, scope_kind, value, item.recorded_at, item.id)
    return MemoryRow(
        id=item.id,
        key=item.key,
        scope_id=item.scope_id,
        label=label,
        group=group,
        recorded_at=item.recorded_at,
        order=order,
        **extra,
    )


def _record_row(
    record: DomainRecord, group: str | None, words: Wording, sort: str, **extra
) -> MemoryRow:
    kind, value = record.scope.kind, record.value
    return _card(record, group, words, sort, scope_kind=kind, value=value, record=record, **extra)


def _rows(
    remembered: Remembered,
    skeletons,
    placed: dict,
    names: ScopeNames,
    words: Wording,
    filters: Filters,
) -> dict[str | None, list[MemoryRow]]:
    """The cards the filter keeps, by group: what is remembered now, then the places of cards
    just marked no longer true or forgotten, with their messages."""
    groups: dict[str | None, list[MemoryRow]] = defaultdict(list)
    for record in remembered.active:
        group = names.group_of(record.scope_id)
        level = certainty(record)
        label = words.label(record.key)
        scope_words = names.words(record.scope_id)
        if filters.keeps(group, level, (label, record.key, record.value, scope_words)):
            groups[group].append(
                _record_row(
                    record, group, words, filters.sort, scope_words=scope_words, certainty=level
                )
            )
    active_ids = {r.id for r in remembered.active}
    for anchor in placed:
        rid = anchor[2:] if anchor.startswith("m-") else None
        record = remembered.by_id.get(rid or "")
        if record is not None and rid not in active_ids and record.retracted_at is not None:
            group = names.group_of(record.scope_id)
            groups[group].append(_record_row(record, group, words, filters.sort, kind="retracted"))
    for skeleton in skeletons:
        group = names.group_of(skeleton.scope_id)
        kind = skeleton.scope_id.split(":", 1)[0]
        groups[group].append(
            _card(skeleton, group, words, filters.sort, scope_kind=kind, value="", kind="forgotten")
        )
    return groups


def _ordered(groups: dict[str | None, list[MemoryRow]], names: ScopeNames) -> list[MemoryRow]:
    """Everywhere first, then each character by name; within a group, by the chosen order."""
    slugs = sorted(
        (g for g in groups if g is not None), key=lambda s: (names.character_name(s).casefold(), s)
    )
    return [
        row
        for slug in ([None] if None in groups else []) + slugs
        for row in sorted(groups[slug], key=lambda r: r.order)
    ]


def _page_number(ordered: list[MemoryRow], placed: dict, asked: QueryDict):
    """The page asked for, or — right after an action — the one holding its card; `?card=<id>`
    (the transcript's "What the companion used" links a card) asks for that card's page."""
    asked_card = f"m-{asked.get('card', '')}"
    for index, row in enumerate(ordered):
        if row.anchor in placed or row.anchor == asked_card:
            return index // PAGE_SIZE + 1
    return asked.get("page")


def _fill(
    rows: list[MemoryRow],
    user,
    remembered: Remembered,
    placed: dict,
    names: ScopeNames,
    words: Wording,
    *,
    use: bool,
    restorable: set[str],
) -> None:
    """What the cards of one page show: sentences, scopes, certainty, provenance, actions,
    their messages (two queries for the page's source messages, whatever its size) and the
    notice of a memory a forget withholds (F7.2; one query, none for a user who never forgot
    anything)."""
    by_id = remembered.by_id
    originals = {
        r.id: original_of(r.record, by_id)
        for r in rows
        if r.record is not None and r.record.authority == "user-confirmed" and not r.record.sources
    }
    found = source_messages(
        user,
        [s for r in rows if r.record is not None for s in r.record.sources]
        + [s for o in originals.values() if o for s in o.sources],
    )
    withheld = (
        withheld_notices(
            user,
            [r.id for r in rows if r.kind == "memory"],
            remembered.registry.labels,
            names,
        )
        if remembered.tombstones
        else {}
    )
    root = reverse("memory:list")
    for row in rows:
        row.base = f"{root}{row.id}/"
        row.withheld = withheld.get(row.id)
        row.notices = placed.get(row.anchor, [])
        if row.record is not None:
            row.sentence = words.sentence(row.key, row.record.value)
            row.scope_words = row.scope_words or names.words(row.scope_id)
        if row.kind == "memory":
            row.certainty_label, row.certainty_help = CERTAINTY[row.certainty]
            if not use:
                row.certainty_help = NOT_USED_NOW
            row.provenance = provenance(row.record, found, originals.get(row.id))
            row.confirmable = row.record.authority not in USER_AUTHORITIES
        elif row.kind == "retracted":
            row.restorable = row.id in restorable


def _page_groups(rows: list[MemoryRow], names: ScopeNames, *, use: bool) -> list[dict]:
    page_groups: list[dict] = []
    for row in rows:
        if not page_groups or page_groups[-1]["slug"] != row.group:
            title, intro = _group_title(names, row.group, use=use)
            page_groups.append(
                {
                    "slug": row.group,
                    "anchor": _group_anchor(row.group),
                    "title": title,
                    "intro": intro,
                    "rows": [],
                }
            )
        page_groups[-1]["rows"].append(row)
    return page_groups


def memory_list_page(user, *, asked: QueryDict, term: str, placed: dict) -> MemoryListPage:
    """One page of `user`'s memories page: `asked`, the page's address parameters (filters,
    `page`, `card`); `term`, the search term; `placed`, this request's messages by the anchor
    of the card they belong to."""
    switches = memory_settings_of(user)
    remembered = remembered_now(user)
    wanted = {anchor[2:] for anchor in placed if anchor.startswith("m-")}
    skeletons = memory_skeletons(
        user, wanted - {r.id for r in remembered.active} - set(remembered.by_id)
    )
    names = ScopeNames(
        user, {r.scope_id for r in remembered.records} | {s.scope_id for s in skeletons}
    )
    words = Wording(remembered.registry.labels, key_templates())

    data = asked.copy()
    data["q"] = term
    form = MemoryFilterForm(data, characters=names.sorted_characters())
    filters = Filters.of(form, term)
    restorable = {r.id for r in no_longer_true(remembered)}
    ordered = _ordered(_rows(remembered, skeletons, placed, names, words, filters), names)

    paginator = Paginator(ordered, PAGE_SIZE)
    page = paginator.get_page(_page_number(ordered, placed, asked))
    rows = list(page.object_list)
    _fill(rows, user, remembered, placed, names, words, use=switches.use, restorable=restorable)
    shown = {row.anchor for row in rows} | {SWITCHES_ANCHOR}

    params = _filter_query(form)
    here = params.copy()
    if page.number > 1:
        here["page"] = page.number
    root = reverse("memory:list")
    return MemoryListPage(
        form=form,
        term=term,
        filters=filters,
        paginator=paginator,
        page=page,
        groups=_page_groups(rows, names, use=switches.use),
        here=f"{root}?{here.urlencode()}" if here else root,
        params=params,
        anything=bool(remembered.active),
        forgotten_before=bool(remembered.tombstones),
        no_longer_true=len(restorable),
        unplaced=[m for anchor, found in placed.items() if anchor not in shown for m in found],
    )
