"""Error handlers: API paths answer problem+json even when the error happens outside DRF
(an unknown URL, a body Django itself refused); pages get the site's own templates
(`templates/400.html`, `403.html`, `404.html`, `500.html`), styled, with a way back."""

from django.http import HttpResponseServerError
from django.shortcuts import redirect
from django.template import loader
from django.views import defaults

from config.api import json_problem_response


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def home(request):
    if request.user.is_authenticated:
        return redirect("memory:list")
    return redirect("login")


def not_found(request, exception=None):
    if _is_api(request):
        return json_problem_response(404, "not_found", "Not found", "No such resource.")
    return defaults.page_not_found(request, exception)


def bad_request(request, exception=None):
    if _is_api(request):
        return json_problem_response(400, "validation_error", "Bad request", "The request could not be read.")
    return defaults.bad_request(request, exception)


def forbidden(request, exception=None):
    if _is_api(request):
        return json_problem_response(403, "permission_denied", "Permission denied", "Permission denied.")
    return defaults.permission_denied(request, exception)


def server_error(request):
    if _is_api(request):
        return json_problem_response(500, "server_error", "Server error", "An unexpected error occurred.")
    return _server_error_page(request)


# Only if 500.html itself cannot be rendered (a broken template or storage): plain, but a page.
FALLBACK_500 = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Something went wrong</title>'
    '</head><body><main><h1>Something went wrong on our side</h1><p>The page could not be shown. '
    'Please try again in a moment, or go to <a href="/">the start page</a>.</p></main></body></html>'
)


def _server_error_page(request):
    """The styled 500 page. It is rendered without the request (no context processors, no
    session, no database: any of them may be what failed), with the request id when one is
    known so a user can quote it to support."""
    context = {"request_id": getattr(request, "request_id", None) or ""}
    try:
        body = loader.get_template("500.html").render(context)
    except Exception:  # the error page must never fail in turn
        body = FALLBACK_500
    return HttpResponseServerError(body)
