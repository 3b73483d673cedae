"""Error handlers: API paths answer problem+json even when the error happens outside DRF
(an unknown URL, a body Django itself refused); pages get plain templates."""

from django.shortcuts import redirect
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
    return defaults.server_error(request)
