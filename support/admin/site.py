"""The admin site's additions for support: the explain view (`/admin/support/explain/`, with
`support.views.explain_view`) and the reveal views among the admin's URLs, and the staff
member's open reveal in every admin page's context (the banner in `admin/base_site.html`)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from support.request_reveal import request_may_reveal, request_reveal
from support.views import (
    explain_turn_view,
    explain_view,
    reveal_close_view,
    reveal_extend_view,
    reveal_view,
)


def _with_support_urls(get_urls):
    def get_urls_with_support():
        return [
            path("support/explain/", admin.site.admin_view(explain_view), name="support_explain"),
            path(
                "support/explain/turn/<uuid:turn_id>/",
                admin.site.admin_view(explain_turn_view),
                name="support_explain_turn",
            ),
            path("support/reveal/", admin.site.admin_view(reveal_view), name="support_reveal"),
            path(
                "support/reveal/<uuid:grant_id>/extend/",
                admin.site.admin_view(reveal_extend_view),
                name="support_reveal_extend",
            ),
            path(
                "support/reveal/<uuid:grant_id>/close/",
                admin.site.admin_view(reveal_close_view),
                name="support_reveal_close",
            ),
        ] + get_urls()

    get_urls_with_support.support_urls = True
    return get_urls_with_support


def _with_reveal_context(each_context):
    """Every admin page knows the staff member's open reveal (the banner in
    `admin/base_site.html`), looked up once per request."""

    def each_context_with_reveal(request):
        context = each_context(request)
        context["support_reveal"] = request_reveal(request)
        context["support_may_reveal"] = request_may_reveal(request)
        return context

    each_context_with_reveal.support_reveal = True
    return each_context_with_reveal


# The default site has no hook for extra views; wrapping its get_urls keeps config/urls.py as it is.
if not getattr(admin.site.get_urls, "support_urls", False):
    admin.site.get_urls = _with_support_urls(admin.site.get_urls)
if not getattr(admin.site.each_context, "support_reveal", False):
    admin.site.each_context = _with_reveal_context(admin.site.each_context)
