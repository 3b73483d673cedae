"""The page a person sees when the server fails: `templates/500.html`, styled, with a way back
and the request id to quote to support. It is rendered without the request (no context
processors, no session, no database: any of them may be what failed), and if even the template
cannot be rendered, a plain page says the same."""

from django.http import HttpResponse
from django.template import loader

FALLBACK_500 = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Something went wrong</title>'
    "</head><body><main><h1>Something went wrong on our side</h1><p>The page could not be shown. "
    'Please try again in a moment, or go to <a href="/">the start '
    "page</a>.</p></main></body></html>"
)


def server_error_page(request_id: str = "") -> HttpResponse:
    try:
        body = loader.get_template("500.html").render({"request_id": request_id or ""})
    except Exception:  # the error page must never fail in turn
        body = FALLBACK_500
    return HttpResponse(body, status=500)
