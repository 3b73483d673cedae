"""Endpoints for operators (SPEC §12 O2, O3): health and readiness for the load balancer, and
metrics for Prometheus. None of them is part of the API schema."""

from __future__ import annotations

import logging

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from rest_framework.exceptions import AuthenticationFailed

from config import metrics
from config.api import BearerTokenAuthentication
from config.cache import cache_state
from config.problems import json_problem_response
from config.storage import database_answers

log = logging.getLogger("companion.ops")


@never_cache
@require_GET
def healthz(request):
    """O2, O6: the process answers. Touches no database and no cache, needs no token, says
    nothing more; gunicorn's threads (gunicorn.conf.py) keep it answering while other
    requests of the same worker wait."""
    return JsonResponse({"status": "ok"})


def _database_answers(connection) -> bool:
    try:
        connection.ensure_connection()
        database_answers(connection)
    except Exception:  # any failure to reach the database means "not ready"
        return False
    return True


def _migrations_pending(connection) -> bool:
    executor = MigrationExecutor(connection)
    return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))


@never_cache
@require_GET
def readyz(request):
    """O2, O6: each dependency — `database` (`ok`/`down`), `cache` (`ok`/`degraded`: requests
    go on without it), `migrations` (`ok`/`pending`, `unknown` without a database) — and 200
    unless the database is down or a migration is pending; then 503 naming the check that
    `failed`. Nothing more."""
    connection = connections[DEFAULT_DB_ALIAS]
    checks = {"database": "ok", "cache": cache_state(), "migrations": "ok"}
    failed = None
    if not _database_answers(connection):
        checks.update(database="down", migrations="unknown")
        failed = "database"
    else:
        try:
            if _migrations_pending(connection):
                checks["migrations"] = "pending"
                failed = "migrations"
        except Exception:  # the migration table cannot be read: the database is not usable
            checks.update(database="down", migrations="unknown")
            failed = "database"
    if failed:
        log.warning("readiness check failed: %s", failed)
        return JsonResponse({"status": "unavailable", "failed": failed, **checks}, status=503)
    return JsonResponse({"status": "ok", **checks})


@never_cache
@require_GET
def metrics_view(request):
    """O3: Prometheus text, to a runtime's Bearer API token only."""
    try:
        authenticated = BearerTokenAuthentication().authenticate(request)
    except AuthenticationFailed:
        authenticated = None
    if authenticated is None:
        response = json_problem_response(401, "unauthenticated", "A Bearer API token is required.")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body, content_type = metrics.exposition()
    return HttpResponse(body, content_type=content_type)
