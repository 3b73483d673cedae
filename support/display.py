"""What support pages show in place of private text, and links between admin pages. Shared by
the support admin base class, the explain view and every app's admin module.

Private text (SPEC §13) is masked outside a reveal: a value, a message or a title shows as
"hidden" — with a link that opens a reveal of its user, for staff who may open one — and a key
shows without its free part (`people.*.works_at`, the form SPEC §12 logs it in), its label
without the name. `masked_key_sql` is the same mask in SQL, so a changelist can search and
sort keys without the free part ever leaving the database for another user's rows."""

from __future__ import annotations

from urllib.parse import urlencode

from django.db.models import Case, CharField, F, Value, When
from django.db.models.functions import Concat, StrIndex, Substr
from django.db.models.lookups import GreaterThan
from django.urls import reverse
from django.utils.html import format_html

from conversations.models import Message
from memory.domain import KEY_FREE_PARTS, loggable_key
from memory.models import MemoryRecord
from memory.presentation import plain_label
from policy.models import PolicyRule

MASK = "hidden"
MASK_TITLE = "Private text: shown only inside a reveal of this user's private text (S1)."
REVEAL_LINK = "Reveal this user's private text…"

# The SQL mask below knows one shape of free part: the segment right after the family's name.
assert set(KEY_FREE_PARTS.values()) <= {1}, "masked_key_sql masks only a second-segment free part"


def reveal_url(user_ref: str, next_url: str = "") -> str:
    """The page that opens a reveal of `user_ref`'s private text, then returns to `next_url`."""
    params = {"user": user_ref, **({"next": next_url} if next_url else {})}
    return reverse("admin:support_reveal") + "?" + urlencode(params)


def masked(reveal: str = "", *, short: bool = False):
    """The mask of private text; with `reveal` (a `reveal_url`), a link that opens a reveal —
    "Reveal…" in a table cell (`short`), the whole sentence elsewhere."""
    mask = format_html('<span class="private-masked" title="{}">{}</span>', MASK_TITLE, MASK)
    if not reveal:
        return mask
    if short:
        return format_html(
            '{} <a class="reveal-link" href="{}" title="{}">Reveal…</a>', mask, reveal, REVEAL_LINK
        )
    return format_html('{} <a class="reveal-link" href="{}">{}</a>', mask, reveal, REVEAL_LINK)


def has_free_part(key: str) -> bool:
    """Does `key` carry a free part (a name from the user's words)?"""
    return isinstance(key, str) and loggable_key(key) not in (key, "<invalid-key>")


def masked_key(key: str, *, reveal: bool = False) -> str:
    """`key` as a page outside a reveal shows it: `people.priya.works_at` → `people.*.works_at`
    (the whole key inside a reveal of its user)."""
    if reveal or not isinstance(key, str):
        return key
    shown = loggable_key(key)
    return key if shown == "<invalid-key>" else shown


def page_label(labels: dict[str, str], key: str) -> str:
    """A key's label as the user's pages write it: the registry's, else the plain one
    ("The basil plant's location", "Where Priya works")."""
    return labels.get(key) or plain_label(key)


def masked_label(key: str, label: str, *, reveal: bool = False) -> str:
    """A key's label outside a reveal: the label of a key without a free part as it is; for
    one with a free part (made from the name: "Where Priya works"), the label without the name."""
    if reveal or not has_free_part(key):
        return label
    return plain_label(loggable_key(key)).replace("*", "Someone", 1)


def masked_key_sql(field: str = "key"):
    """`masked_key` as a database expression of the column `field`."""
    whens = []
    for family in KEY_FREE_PARTS:
        prefix = f"{family}."
        rest = Substr(F(field), len(prefix) + 1)
        dot = StrIndex(rest, Value("."))
        tail = Case(
            When(GreaterThan(dot, 0), then=Substr(rest, dot)),
            default=Value(""),
            output_field=CharField(),
        )
        whens.append(
            When(
                **{
                    f"{field}__startswith": prefix,
                    "then": Concat(Value(f"{prefix}*"), tail, output_field=CharField()),
                }
            )
        )
    return Case(*whens, default=F(field), output_field=CharField())


def admin_link(obj_or_model, pk, text=None):
    """A link to an object's change page (by id, without loading it)."""
    if pk is None:
        return "-"
    opts = obj_or_model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, text if text is not None else pk)


def explain_url(**params) -> str:
    """The explain view pre-filled with `params` (a list value repeats its parameter)."""
    return (
        reverse("admin:support_explain")
        + "?"
        + urlencode({k: v for k, v in params.items() if v}, doseq=True)
    )


def explain_turn_url(turn_id) -> str:
    """One click from a turn, a message or a memory's source: the explain view for that turn's
    conversation, scene and plan time (`support.views.explain_turn_view` fills it in)."""
    return reverse("admin:support_explain_turn", args=[turn_id])


def short_id(value) -> str:
    """An id as the explain tables print it: its first 8 characters, the whole in a tooltip."""
    text = str(value)
    return format_html(
        '<code title="{}">{}</code>', text, text[:8] + "…" if len(text) > 9 else text
    )


def scope_short(scope_id: str) -> str:
    """`conversation:57f5b2f9-…` → "conversation 57f5b2f9…" (the whole id in the tooltip)."""
    kind, _, rest = scope_id.partition(":")
    if kind in ("conversation", "scene"):
        conversation, _, scene = rest.partition(":")
        text = f"{kind} {conversation[:8]}…" + (f" · {scene}" if scene else "")
    elif kind == "character":
        text = f"character {rest.rpartition(':')[2]}"
    elif kind == "user":
        text = "user (everywhere)"
    else:
        text = scope_id
    return text


def plan_rows(plan, *, reveal_link: str = "") -> dict:
    """A stored plan as the tables of `admin/support/plan_snapshot.html` show it: links by id,
    values only where `turn_plan` revealed them, the mask elsewhere (with `reveal_link`, a link
    that opens a reveal of the turn's user); keys and labels without their free part outside a
    reveal. `plan` is a `support.services.TurnPlan`."""

    def memory(item):
        return {
            "link": admin_link(MemoryRecord, item.id, short_id(item.id))
            if not item.gone
            else short_id(item.id),
            "item": item,
            "scope": scope_short(item.scope_id) if item.scope_id else "",
            "key": masked_key(item.key, reveal=plan.reveal),
            "label": masked_label(item.key, item.label, reveal=plan.reveal),
            "value": item.value if item.value is not None else masked(reveal_link, short=True),
        }

    def message(item):
        text = f"#{item.seq}" if item.seq is not None else short_id(item.id)
        return {"link": admin_link(Message, item.id, text) if not item.gone else text, "item": item}

    return {
        "memories": [memory(i) for i in plan.memories],
        "history": [message(i) for i in plan.history],
        "current": message(plan.current) if plan.current else None,
        "left_out": [memory(i) if i.kind == "memory" else message(i) for i in plan.left_out],
    }


# The explain page links to rules and memories in the admin by their options.
EXPLAIN_ADMIN_OPTS = {"rule_opts": PolicyRule._meta, "memory_opts": MemoryRecord._meta}


def explain_record_rows(items, *, reveal: bool, reveal_link: str) -> tuple[list[dict], set]:
    """The explain page's rows for the resolver's records, masked outside a reveal (S1), and
    the ids of the records whose private text a row shows (for the reveal's page log)."""
    rows, shown = [], set()
    for item in items:
        record = item.record
        value = record.value if reveal else None
        if reveal and (record.value or masked_key(record.key) != record.key):
            shown.add(record.id)
        key = masked_key(record.key, reveal=reveal)
        rows.append(
            {
                "item": item,
                "record": record,
                "detail": item.detail.replace(record.key, key),  # the slot names the key
                "link": admin_link(MemoryRecord, record.id, short_id(record.id)),
                "key": key,
                "label": masked_label(record.key, item.label, reveal=reveal),
                "scope": scope_short(record.scope_id),
                "value": value if value else ("" if reveal else masked(reveal_link, short=True)),
                "erased": record.status == "forgotten",
            }
        )
    return rows, shown
