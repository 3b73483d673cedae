"""Refuse oversized API bodies before anything reads them: DRF parses JSON from the request
stream, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE alone would not stop a huge body."""

from django.conf import settings

from config.problems import json_problem_response


class ApiBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_problem_response(400, "validation_error", "Invalid Content-Length.")
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if request.path.endswith("/import"):
                limit = settings.IMPORT_MAX_BYTES
            if length > limit:
                return json_problem_response(
                    413, "payload_too_large", f"The body is larger than {limit} bytes."
                )
        return self.get_response(request)
