"""What support pages show in place of private text, and links between admin pages. Shared by
the support admin base class, the explain view and every app's admin module."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse
from django.utils.html import format_html

from conversations.models import Message
from memory.models import MemoryRecord

MASK = "hidden"
MASK_TITLE = "Private text: needs the view_private_text permission (every view is logged)."


def masked():
    return format_html('<span class="private-masked" title="{}">{}</span>', MASK_TITLE, MASK)


def admin_link(obj_or_model, pk, text=None):
    """A link to an object's change page (by id, without loading it)."""
    if pk is None:
        return "-"
    opts = obj_or_model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, text if text is not None else pk)


def explain_url(**params) -> str:
    """The explain view pre-filled with `params` (a list value repeats its parameter)."""
    return reverse("admin:support_explain") + "?" + urlencode({k: v for k, v in params.items() if v}, doseq=True)


def explain_turn_url(turn_id) -> str:
    """One click from a turn, a message or a memory's source: the explain view for that turn's
    conversation, scene and plan time (`support.views.explain_turn_view` fills it in)."""
    return reverse("admin:support_explain_turn", args=[turn_id])


def short_id(value) -> str:
    """An id as the explain tables print it: its first 8 characters, the whole in a tooltip."""
    text = str(value)
    return format_html('<code title="{}">{}</code>', text, text[:8] + "…" if len(text) > 9 else text)


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


def plan_rows(plan) -> dict:
    """A stored plan as the tables of `admin/support/plan_snapshot.html` show it: links by id,
    values only where `turn_plan` revealed them, the mask elsewhere. `plan` is a
    `support.services.TurnPlan`."""

    def memory(item):
        return {
            "link": admin_link(MemoryRecord, item.id, short_id(item.id)) if not item.gone else short_id(item.id),
            "item": item, "scope": scope_short(item.scope_id) if item.scope_id else "",
            "value": item.value if item.value is not None else masked(),
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
