"""What support pages show in place of private text, and links between admin pages. Shared by
the support admin base class, the explain view and every app's admin module."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse
from django.utils.html import format_html

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
    return reverse("admin:support_explain") + "?" + urlencode({k: v for k, v in params.items() if v})
