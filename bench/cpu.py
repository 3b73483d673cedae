"""Server CPU per request in a load phase: the CPU seconds (utime + stime of /proc/<pid>/stat)
the gunicorn master's children (its workers) and the PostgreSQL backends of the benchmark's
database (their pids from `pg_stat_activity`) used while the phase ran, divided by the requests
the phase completed — `cpu_ms_per_request: {app, db, requests}`. Standard library only; Linux.

A sampler thread reads the processes every `INTERVAL` seconds and keeps each one's last reading,
so a worker or a backend that starts during the phase counts from zero, and one that ends in it
(a connection past CONN_MAX_AGE is closed and opened again) counts up to its last reading: at
most one interval of one process is lost. A process's CPU at the start of the phase is its
first reading. The master itself, PgBouncer, PostgreSQL's background processes and the
clients are not counted. Where the database is not on this machine (no backend of the
database has a readable /proc entry named `postgres`), `db` is None.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

PROC = Path("/proc")
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
INTERVAL = 0.5
# The workers are found by a scan of /proc (a few ms of CPU) every this many samples, and
# whenever one of them is gone; in between only their stat files are read.
RESCAN = 4


def stat(pid: int, proc: Path = PROC) -> tuple[str, int, int] | None:
    """(command name, parent pid, utime + stime in clock ticks) of a process, or None when it
    is gone. The name sits in parentheses and may hold spaces: the fields after the last ')'
    are the state (field 3), the parent (4), … utime (14) and stime (15)."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    head, _, tail = text.rpartition(")")
    fields = tail.split()
    if len(fields) < 13:
        return None
    return head.partition("(")[2], int(fields[1]), int(fields[11]) + int(fields[12])


def children(ppid: int, proc: Path = PROC) -> list[int]:
    """The pids whose parent is `ppid` (a scan of /proc)."""
    found = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            read = stat(int(entry.name), proc)
            if read is not None and read[1] == ppid:
                found.append(int(entry.name))
    return found


def backends(conn, database: str) -> list[int]:
    """The pids of the PostgreSQL backends connected to `database`, the caller's own left out."""
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (database,),
    ).fetchall()
    return [pid for (pid,) in rows]


class CpuMeter:
    """`start()`, the phase, `stop()` → {"app_s", "db_s" (None where the database is not
    local), "app_processes", "db_processes"}. `conn` is an autocommit psycopg connection to
    another database of the server (its own backend is then not one of `database`'s)."""

    def __init__(self, master_pid: int, conn, database: str, proc: Path = PROC):
        self.master_pid = master_pid
        self.conn = conn
        self.database = database
        self.proc = proc
        self.first: dict[tuple[str, int], int] = {}
        self.last: dict[tuple[str, int], int] = {}
        self._workers: list[int] = []
        self._seen_at_start: set[tuple[str, int]] = set()
        self._samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        if self._samples % RESCAN == 0:
            self._workers = children(self.master_pid, self.proc)
        self._samples += 1
        pids = [("app", pid) for pid in self._workers]
        pids += [("db", pid) for pid in backends(self.conn, self.database)]
        for key in pids:
            read = stat(key[1], self.proc)
            if read is None or (key[0] == "db" and read[0] != "postgres"):
                if key[0] == "app":
                    self._samples = 0  # a worker is gone: find its replacement next time
                continue
            self.first.setdefault(key, read[2])
            self.last[key] = read[2]

    def start(self) -> CpuMeter:
        self.sample()
        # A process first seen after the start began in the phase: it counts from zero.
        self._seen_at_start = set(self.first)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self.sample()

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._samples = 0
        self.sample()
        used = {"app": 0, "db": 0}
        counted = {"app": 0, "db": 0}
        for key, last in self.last.items():
            start = self.first[key] if key in self._seen_at_start else 0
            used[key[0]] += last - start
            counted[key[0]] += 1
        return {
            "app_s": used["app"] / TICK,
            "db_s": used["db"] / TICK if counted["db"] else None,
            "app_processes": counted["app"],
            "db_processes": counted["db"],
        }


def per_request(used: dict, requests: int) -> dict:
    """CPU milliseconds per completed request, the app's and the database's."""

    def ms(seconds):
        if seconds is None or not requests:
            return None
        return seconds * 1000 / requests

    return {
        "app": ms(used["app_s"]),
        "db": ms(used["db_s"]),
        "requests": requests,
        "app_s": used["app_s"],
        "db_s": used["db_s"],
        "app_processes": used["app_processes"],
        "db_processes": used["db_processes"],
    }


def metered(server, database: str, requests_per_unit: int, drive) -> dict:
    """Run `drive()` (a `bench.turns._drive` call: it answers `units`) under a `CpuMeter` on
    `server`'s workers and `database`'s backends; its answer gains `cpu_ms_per_request`
    (requests = units × `requests_per_unit`: a unit's requests, completed)."""
    from .db import _pg_admin_connect

    with _pg_admin_connect() as conn:
        meter = CpuMeter(server.proc.pid, conn, database).start()
        try:
            result = drive()
        finally:
            used = meter.stop()
    result["cpu_ms_per_request"] = per_request(used, result["units"] * requests_per_unit)
    return result


def cpu_total(phase: dict) -> float | None:
    """App + database CPU ms per request of a metered phase (None when either is unknown)."""
    cpu = phase.get("cpu_ms_per_request") or {}
    if cpu.get("app") is None or cpu.get("db") is None:
        return None
    return cpu["app"] + cpu["db"]


def cpu_ratio(one_trip: dict, ping_auth: dict) -> float | None:
    """Server CPU (app + database) per one-round-trip turn — its two requests — over that of
    one authenticated ping, both from the same clients on the same server."""
    turn, ping = cpu_total(one_trip), cpu_total(ping_auth)
    return 2 * turn / ping if turn is not None and ping else None
