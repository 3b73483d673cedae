"""Error handlers: API paths answer problem+json even when the error happens outside DRF
(an unknown URL, a body Django itself refused); pages get the site's own templates
(`templates/400.html`, `403.html`, `404.html`, `500.html`), styled, with a way back."""

import json

from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from config import guides, problems
from config.observability import handle_uncaught
from config.problems import json_problem_response


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def home(request):
    if request.user.is_authenticated:
        return redirect("memory:list")
    return redirect("login")


def not_found(request, exception=None):
    if _is_api(request):
        return json_problem_response(404, "not_found", "No such resource.")
    return defaults.page_not_found(request, exception)


def bad_request(request, exception=None):
    if _is_api(request):
        return json_problem_response(400, "validation_error", "The request could not be read.")
    return defaults.bad_request(request, exception)


def forbidden(request, exception=None):
    """A staff member refused an admin page gets the admin's own page, with the reason the
    view gave (which permission is missing); everyone else gets the site's `403.html`."""
    if _is_api(request):
        return json_problem_response(403, "permission_denied", "Permission denied.")
    user = getattr(request, "user", None)
    if request.path.startswith("/admin/") and user is not None and user.is_active and user.is_staff:
        from django.contrib import admin

        reason = str(exception) if exception is not None and str(exception) else ""
        context = {
            **admin.site.each_context(request),
            "title": "You cannot open this page",
            "subtitle": None,
            "reason": reason,
        }
        return render(request, "admin/403.html", context, status=403)
    return defaults.permission_denied(request, exception)


def server_error(request):
    """handler500 (an exception outside a view): logged once, answered with the request id
    (SPEC §12 O1; see config.observability)."""
    return handle_uncaught(request)


@csrf_exempt  # the API never uses cookies; an unknown path is a 404 for every method
def api_not_found(request, rest=""):
    """Any path under /api/ that no route matches — an unknown operation or a malformed id —
    is a problem+json 404, also with DJANGO_DEBUG on (where Django would show its HTML page)."""
    return json_problem_response(404, "not_found", "No such resource.")


def problem_index(request):
    """SPEC C3: the list of every problem code, each linking to its page. No sign-in."""
    items = [
        {"code": code, "status": p.status, "title": p.title}
        for code, p in problems.PROBLEM_CODES.items()
    ]
    return render(request, "problems/index.html", {"problems": items})


def problem_page(request, code):
    """SPEC C3: the page a problem's `type` (`/problems/<code>`) names, drawn from the list
    the API raises from (`config.problems.PROBLEM_CODES`); an unknown code is the 404 page."""
    problem = problems.PROBLEM_CODES.get(code)
    if problem is None:
        raise Http404("No such problem code.")
    example = json.dumps(problems.example(code), indent=2, ensure_ascii=False)
    return render(
        request, "problems/problem.html", {"code": code, "problem": problem, "example": example}
    )


def connect_an_assistant(request):
    """SPEC §15 M2, M3: the README's "Connect an assistant", which the API's documentation
    links to. No sign-in."""
    title = guides.CONNECT_AN_ASSISTANT
    # The README's own Markdown, rendered with raw HTML turned off: text, never markup.
    body = mark_safe(guides.readme_section(title))
    return render(request, "guides/guide.html", {"title": title, "body": body})
