"""The benchmark's own database: a temporary SQLite file, or the dedicated PostgreSQL
database `companion_bench` (created and dropped here; no other database is ever touched; in a
linked git worktree its name carries the worktree's, `checkout_suffix`).

`configure()` must run before `django.setup()`: it points DATABASE_URL at the benchmark
database and selects `bench.settings`."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import zlib
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

CHECKOUT = Path(__file__).resolve().parent.parent


def checkout_suffix(checkout: Path = CHECKOUT) -> str:
    """What the benchmark's database names carry after `companion_bench`: nothing in a main
    checkout (`.git` a directory, or no git at all), `_<directory>_<crc of its path>` in a
    linked git worktree (`.git` a file), so checkouts of one repository benchmarking at the
    same time on one server never share a database."""
    if not (checkout / ".git").is_file():
        return ""
    name = re.sub(r"[^a-z0-9]+", "_", checkout.name.lower()).strip("_")[:24]
    return f"_{name}_{zlib.crc32(str(checkout).encode()) & 0xFFFFFF:06x}"


# BENCH_PG_DATABASE names another database of one's own on a shared server (it is created and
# dropped like companion_bench).
PG_DATABASE = os.environ.get("BENCH_PG_DATABASE") or "companion_bench" + checkout_suffix()
# Server part only; the database name is always PG_DATABASE.
PG_SERVER = os.environ.get("BENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432")


def pg_url(database: str = PG_DATABASE) -> str:
    parts = urlsplit(PG_SERVER)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, "", ""))


def _pg_admin_connect():
    import psycopg

    parts = urlsplit(PG_SERVER)
    return psycopg.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password,
        dbname="postgres",
        autocommit=True,
        connect_timeout=3,
    )


def postgres_reachable() -> tuple[bool, str]:
    try:
        with _pg_admin_connect() as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
        return True, f"PostgreSQL {version}"
    except Exception as exc:  # noqa: BLE001 - any failure means "not available"
        return False, f"{type(exc).__name__}: {exc}".splitlines()[0]


def _pg_drop(conn) -> None:
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()",
        (PG_DATABASE,),
    )
    conn.execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}"')


# Session advisory lock that serialises benchmark runs on one server: `companion_bench` has
# a fixed name, so a second run would otherwise drop the database under the first.
PG_LOCK_KEY = (
    0x636F6D70_62656E63
    if PG_DATABASE == "companion_bench"  # "compbenc"
    else 0x636F6D70_00000000 | zlib.crc32(PG_DATABASE.encode())
)


class BenchBusy(RuntimeError):
    """Another benchmark run holds `companion_bench`."""


class BenchDatabase:
    """Create, configure and later remove the benchmark database of one vendor."""

    def __init__(self, vendor: str):
        assert vendor in ("sqlite", "postgres"), vendor
        self.vendor = vendor
        self.tmpdir: str | None = None
        self.url = ""
        self._lock = None  # the admin connection holding PG_LOCK_KEY

    def create(self, wait: float = 600.0) -> str:
        """Create the database; on PostgreSQL first wait (at most `wait` seconds) for any
        other benchmark run to finish with it."""
        if self.vendor == "sqlite":
            self.tmpdir = tempfile.mkdtemp(prefix="companion-bench-")
            self.url = f"sqlite:///{self.tmpdir}/bench.sqlite3"
            return self.url
        self._lock = _pg_admin_connect()
        deadline = time.monotonic() + wait
        while not self._lock.execute("SELECT pg_try_advisory_lock(%s)", (PG_LOCK_KEY,)).fetchone()[
            0
        ]:
            if time.monotonic() > deadline:
                self._lock.close()
                self._lock = None
                raise BenchBusy(f"{PG_DATABASE} is in use by another benchmark run")
            time.sleep(1.0)
        _pg_drop(self._lock)
        self._lock.execute(f'CREATE DATABASE "{PG_DATABASE}"')
        self.url = pg_url()
        return self.url

    def configure(self) -> None:
        os.environ["DATABASE_URL"] = self.url
        os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
        os.environ.setdefault("BENCH_LOG_NAME", f"server-{self.vendor}.log")
        os.environ.setdefault("THROTTLE_RUNTIME", "1000000/min")  # see bench.turns.Server

    def drop(self) -> None:
        if self.vendor == "sqlite":
            if self.tmpdir:
                shutil.rmtree(self.tmpdir, ignore_errors=True)
            return
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may not be set up
            pass
        try:
            for _ in range(5):
                try:
                    with _pg_admin_connect() as conn:
                        _pg_drop(conn)
                    return
                except Exception:  # noqa: BLE001 - a closing backend may still hold it
                    time.sleep(0.5)
        finally:
            if self._lock is not None:
                self._lock.close()  # releases the advisory lock
                self._lock = None


def migrate() -> float:
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    return time.perf_counter() - started
