"""A PgBouncer of one's own on loopback, in transaction pooling, in front of one PostgreSQL
database — for the suite (tests/pooled/) and the benchmark's pooler phase (bench.turns).

Debian's `pgbouncer` package provides the binary (`.ci/run` installs it). It listens on a free
127.0.0.1 port, trusts the one user it serves (the server behind it is the local cluster that
trusts loopback too), keeps its configuration, log and pid file in a directory of its own,
and is stopped by `stop()` (SIGTERM to the process started here, then a bounded wait). PgBouncer
refuses to run as root: started by root, it runs as the `postgres` system user (`-u`).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

CANDIDATES = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")


def binary() -> str | None:
    """The pgbouncer executable, or None where it is not installed."""
    found = shutil.which("pgbouncer")
    if found:
        return found
    return next((c for c in CANDIDATES if os.access(c, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("PgBouncer does not run as root and there is no user to run it as")


class PortTaken(RuntimeError):
    """Another process took the chosen port first."""


class PgBouncer:
    """`PgBouncer(host, port, user, database, pool_size=…)`; `start()`, then connect to
    `self.host`:`self.port` with the same user and database name; `stop()`."""

    host = "127.0.0.1"

    def __init__(
        self,
        *,
        server_host: str,
        server_port: int,
        user: str,
        database: str,
        password: str | None = None,
        pool_size: int = 5,
        max_clients: int = 200,
    ):
        self.server_host = server_host or "127.0.0.1"
        self.server_port = int(server_port or 5432)
        self.user = user or "postgres"
        self.password = password
        self.database = database
        self.pool_size = pool_size
        self.max_clients = max_clients
        self.port = _free_port()
        self.dir: Path | None = None
        self.proc: subprocess.Popen | None = None

    @classmethod
    def for_url(cls, url: str, **kwargs) -> PgBouncer:
        """In front of the database a postgres:// URL names."""
        parts = urlsplit(url)
        return cls(
            server_host=parts.hostname or "127.0.0.1",
            server_port=parts.port or 5432,
            user=parts.username or "postgres",
            password=parts.password,
            database=parts.path.lstrip("/"),
            **kwargs,
        )

    @classmethod
    def for_settings(cls, database: dict, **kwargs) -> PgBouncer:
        """In front of the database one entry of Django's DATABASES names."""
        return cls(
            server_host=database.get("HOST") or "127.0.0.1",
            server_port=int(database.get("PORT") or 5432),
            user=database.get("USER") or "postgres",
            password=database.get("PASSWORD") or None,
            database=database["NAME"],
            **kwargs,
        )

    def url(self) -> str:
        """A postgres:// URL that reaches the database through this PgBouncer."""
        secret = f":{self.password}" if self.password else ""
        return f"postgres://{self.user}{secret}@{self.host}:{self.port}/{self.database}"

    def config(self) -> str:
        server = (
            f"host={self.server_host} port={self.server_port} dbname={self.database} "
            f"user={self.user}" + (f" password={self.password}" if self.password else "")
        )
        return "\n".join(
            [
                "[databases]",
                f"{self.database} = {server}",
                "[pgbouncer]",
                f"listen_addr = {self.host}",
                f"stats_users = {self.user}",  # SHOW STATS on its console (`stats()`)
                f"listen_port = {self.port}",
                "unix_socket_dir =",
                "auth_type = trust",
                f"auth_file = {self.dir / 'users.txt'}",
                "pool_mode = transaction",
                f"default_pool_size = {self.pool_size}",
                f"max_client_conn = {self.max_clients}",
                # Waiting clients past this fail instead of hanging a test or a benchmark phase.
                "query_wait_timeout = 60",
                "server_login_retry = 1",
                f"logfile = {self.dir / 'pgbouncer.log'}",
                f"pidfile = {self.dir / 'pgbouncer.pid'}",
                "",
            ]
        )

    def start(self, timeout: float = 15.0, attempts: int = 3) -> PgBouncer:
        """Start it; a port taken between choosing it and listening on it is chosen again."""
        for _attempt in range(attempts):
            try:
                return self._start(timeout)
            except PortTaken:
                self.stop()
                self.port = _free_port()
        raise RuntimeError(f"pgbouncer found no free port in {attempts} attempts")

    def _start(self, timeout: float) -> PgBouncer:
        exe = binary()
        if exe is None:
            raise RuntimeError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
        self.dir = Path(tempfile.mkdtemp(prefix="companion-pgbouncer-"))
        (self.dir / "users.txt").write_text(f'"{self.user}" "{self.password or ""}"\n')
        (self.dir / "pgbouncer.ini").write_text(self.config())
        command = [exe]
        user = _run_as()
        if user:
            # The user it switches to writes the log and pid file and rereads the auth file.
            info = pwd.getpwnam(user)
            for path in (self.dir, *self.dir.iterdir()):
                os.chown(path, info.pw_uid, info.pw_gid)
            command += ["-u", user]
        command.append(str(self.dir / "pgbouncer.ini"))
        self.proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if "Address already in use" in self.log():
                    raise PortTaken(self.port)
                raise RuntimeError(
                    f"pgbouncer exited with {self.proc.returncode}: {self.log()[-500:]}"
                )
            # Its own word that it listens (a connect could reach whoever holds the port).
            if f"listening on {self.host}:{self.port}" in self.log():
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"pgbouncer did not listen in {timeout:.0f}s: {self.log()[-500:]}")

    def stats(self) -> dict:
        """What it served the database so far (its console's SHOW STATS): transactions and
        statements."""
        import psycopg

        with psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname="pgbouncer",
            autocommit=True,
            cursor_factory=psycopg.ClientCursor,
        ) as console:
            cursor = console.cursor()  # the console speaks the simple query protocol only
            cursor.execute("SHOW STATS")
            names = [d.name for d in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        row = next((r for r in rows if r["database"] == self.database), None)
        if row is None:  # listed from its first client on
            return {"transactions": 0, "queries": 0}
        return {
            "transactions": int(row["total_xact_count"]),
            "queries": int(row["total_query_count"]),
        }

    def log(self) -> str:
        try:
            return (self.dir / "pgbouncer.log").read_text() if self.dir else ""
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> PgBouncer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
