"""bench/cpu.py: a load phase's server CPU per request — the utime + stime (/proc/<pid>/stat)
the gunicorn master's children and the benchmark database's PostgreSQL backends used while the
phase ran, divided by the requests it completed. Read from a /proc made here, so every figure
is exact."""

import os

from bench import cpu


def _stat(pid: int, name: str, ppid: int, utime: int, stime: int) -> str:
    # Fields 3.. after the name: state, ppid, pgrp, session, tty, tpgid, flags, minflt,
    # cminflt, majflt, cmajflt, utime (14), stime (15), cutime, cstime, ...
    rest = ["S", ppid, 1, 1, 0, -1, 0, 0, 0, 0, 0, utime, stime, 0, 0, 20, 0, 1, 0]
    return f"{pid} ({name}) " + " ".join(str(x) for x in rest) + "\n"


class FakeProc:
    def __init__(self, root):
        self.root = root

    def put(self, pid: int, name: str, ppid: int, utime: int, stime: int = 0) -> None:
        (self.root / str(pid)).mkdir(exist_ok=True)
        (self.root / str(pid) / "stat").write_text(_stat(pid, name, ppid, utime, stime))

    def drop(self, pid: int) -> None:
        (self.root / str(pid) / "stat").unlink()
        (self.root / str(pid)).rmdir()


class FakeConn:
    """pg_stat_activity as the meter reads it: the pids of the database's backends."""

    def __init__(self, pids):
        self.pids = pids

    def execute(self, sql, params):
        assert "pg_stat_activity" in sql and params == ("companion_bench",)
        pids = list(self.pids)

        class Rows:
            def fetchall(self):
                return [(pid,) for pid in pids]

        return Rows()


def test_it_reads_utime_and_stime_after_a_command_name_with_spaces_and_parentheses(tmp_path):
    proc = FakeProc(tmp_path)
    proc.put(42, "gunicorn: worker (x) [config]", 7, 120, 30)
    assert cpu.stat(42, tmp_path) == ("gunicorn: worker (x) [config]", 7, 150)
    assert cpu.stat(43, tmp_path) is None


def test_it_reads_its_own_process_and_finds_its_parent_among_the_children_of_its_parent():
    name, ppid, ticks = cpu.stat(os.getpid())
    assert ppid == os.getppid() and ticks >= 0 and name
    assert os.getpid() in cpu.children(os.getppid())


def test_it_counts_what_each_worker_and_backend_used_during_the_phase(tmp_path):
    """A worker seen at the start counts from its first reading; a backend that connected
    during the phase counts from zero; one that ended counts up to its last reading; the
    master, a process of another parent and a backend not named postgres are not counted."""
    proc = FakeProc(tmp_path)
    proc.put(10, "gunicorn", 1, 500)  # the master
    proc.put(11, "gunicorn", 10, 100, 20)  # workers
    proc.put(12, "gunicorn", 10, 200)
    proc.put(99, "python", 1, 1_000)  # another process
    proc.put(50, "postgres", 1, 300)  # a backend of the database
    proc.put(51, "postgres", 1, 40)  # a backend that ends during the phase
    conn = FakeConn([50, 51])
    meter = cpu.CpuMeter(10, conn, "companion_bench", tmp_path)
    meter.sample()
    meter._seen_at_start = set(meter.first)

    proc.put(10, "gunicorn", 1, 900)
    proc.put(11, "gunicorn", 10, 130, 40)  # +50
    proc.put(12, "gunicorn", 10, 260)  # +60
    proc.put(99, "python", 1, 5_000)
    proc.put(51, "postgres", 1, 65)  # +25, then it ends
    meter.sample()
    proc.drop(51)
    proc.put(52, "postgres", 1, 15)  # connected during the phase: 15 from zero
    proc.put(53, "pgbouncer", 1, 70)  # listed, but not a postgres process
    conn.pids = [50, 52, 53]
    proc.put(50, "postgres", 1, 380)  # +80
    used = meter.stop()
    assert used == {
        "app_s": 110 / cpu.TICK,  # 50 + 60 ticks
        "db_s": 120 / cpu.TICK,  # 80 + 25 + 15
        "app_processes": 2,
        "db_processes": 3,
    }


def test_it_gives_no_database_figure_where_no_backend_is_a_local_postgres(tmp_path):
    proc = FakeProc(tmp_path)
    proc.put(10, "gunicorn", 1, 0)
    proc.put(11, "gunicorn", 10, 0)
    meter = cpu.CpuMeter(10, FakeConn([12345]), "companion_bench", tmp_path)
    meter.sample()
    meter._seen_at_start = set(meter.first)
    proc.put(11, "gunicorn", 10, 25)
    used = meter.stop()
    assert used["db_s"] is None and used["app_s"] == 25 / cpu.TICK
    per = cpu.per_request(used, 50)
    assert per["app"] == 25 / cpu.TICK * 1000 / 50 and per["db"] is None


def test_it_divides_by_the_completed_requests_and_compares_a_turn_with_a_ping():
    used = {"app_s": 3.0, "db_s": 1.0, "app_processes": 4, "db_processes": 4}
    per = cpu.per_request(used, 2_000)
    assert (per["app"], per["db"], per["requests"]) == (1.5, 0.5, 2_000)
    assert cpu.per_request(used, 0)["app"] is None
    one_trip = {"cpu_ms_per_request": {"app": 6.0, "db": 2.0}}
    ping = {"cpu_ms_per_request": {"app": 0.75, "db": 0.25}}
    # A turn is two requests: 2 × 8.0 ms against 1.0 ms.
    assert cpu.cpu_ratio(one_trip, ping) == 16.0
    assert cpu.cpu_ratio(one_trip, {"cpu_ms_per_request": {"app": 1.0, "db": None}}) is None
