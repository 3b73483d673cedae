"""gunicorn settings; gunicorn reads ./gunicorn.conf.py by itself, so `gunicorn
config.wsgi:application --bind 0.0.0.0:8000` serves with everything below. The bind address
stays on the command line; `WEB_CONCURRENCY` overrides the number of workers.

Serving:
- Workers: 2 × the cores this process may run on + 1 (a sync-style worker waits on the
  database for much of a request, so a core serves about two). `WEB_CONCURRENCY` overrides.
- `gthread` workers with 4 threads each (`GUNICORN_THREADS`): a request that waits (on a slow
  database, a cache timing out) holds one thread, not the worker, so `/healthz` and the other
  requests go on (SPEC §12 O6); Python runs one thread at a time, so throughput stays that of
  the cores. An idle keep-alive connection waits in the worker's poller instead of being
  closed, so a runtime that reuses its connection saves the TCP handshake (the `sync` worker
  ignores `keepalive`). Each thread holds its own database connection: workers × threads
  connections at most.
- `preload_app`: Django and every module are imported once, in the master, before the
  workers fork: workers start fast and share those pages copy-on-write. The URLs (every view
  and serializer) and the MCP SDK behind `/mcp`, which Django and `agents.urls` otherwise
  import on a worker's first request, are imported there too. The master then
  closes any database connection (a forked connection would be shared by every worker) and
  runs `gc.freeze()`, so the collector never touches (and so never copies) the objects loaded
  before the fork.

Metrics with several workers (SPEC §12 O3): each worker is its own process with its own
counters, so prometheus-client runs in multiprocess mode. Before any worker starts, this file
points PROMETHEUS_MULTIPROC_DIR at an empty directory (a fresh one per server unless the
operator names one, which is then emptied at start); every worker writes its samples there,
`/metrics` sums them, and a worker that exits is marked dead so its gauges go away.
"""

import gc
import glob
import os
import tempfile


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


workers = int(os.environ.get("WEB_CONCURRENCY") or 2 * _cores() + 1)
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS") or 4)
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE") or 5)
preload_app = True

_multiproc_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if not _multiproc_dir:
    _multiproc_dir = tempfile.mkdtemp(prefix="companion-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _multiproc_dir


def on_starting(server):
    os.makedirs(_multiproc_dir, exist_ok=True)
    for stale in glob.glob(os.path.join(_multiproc_dir, "*.db")):
        os.remove(stale)


def when_ready(server):
    """The app is loaded (preload_app) and no worker is forked yet."""
    _import_what_requests_import()
    _close_database_connections()
    gc.collect()
    gc.freeze()


def pre_fork(server, worker):
    # A worker replaced later is forked from this master too: it must not inherit a connection.
    _close_database_connections()


def _import_what_requests_import():
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (imports every view, serializer and admin)
    import agents.transport  # noqa: F401 (the MCP SDK, imported by `/mcp`'s first call)


def _close_database_connections():
    from django.db import connections

    connections.close_all()


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, _multiproc_dir)


# If an access log is switched on (--access-logfile), it shows the path without the query
# string: query parameters can hold a user ref or a key (SPEC §12: keys' free parts stay private).
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(L)ss "%({x-request-id}o)s"'
