"""gunicorn settings (gunicorn reads ./gunicorn.conf.py by itself; the bind address and the
number of workers stay on the command line or in WEB_CONCURRENCY).

Metrics with several workers (SPEC §12 O3): each worker is its own process with its own
counters, so prometheus-client runs in multiprocess mode. Before any worker starts, this file
points PROMETHEUS_MULTIPROC_DIR at an empty directory (a fresh one per server unless the
operator names one, which is then emptied at start); every worker writes its samples there,
`/metrics` sums them, and a worker that exits is marked dead so its gauges go away.
"""

import glob
import os
import tempfile

_multiproc_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if not _multiproc_dir:
    _multiproc_dir = tempfile.mkdtemp(prefix="companion-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _multiproc_dir


def on_starting(server):
    os.makedirs(_multiproc_dir, exist_ok=True)
    for stale in glob.glob(os.path.join(_multiproc_dir, "*.db")):
        os.remove(stale)


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, _multiproc_dir)


# If an access log is switched on (--access-logfile), it shows the path without the query
# string: query parameters can hold a user ref or a key (SPEC §12: keys' free parts stay private).
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(L)ss "%({x-request-id}o)s"'
