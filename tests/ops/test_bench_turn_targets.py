"""The benchmark's SPEC I9 targets (bench/turn_targets.py), compared, never asserted: the
single-client turn on a conversation of 5,000 messages within 1.2× the same turn on a fresh one
of 100, the plan answer at 10,000 memories within 1.2× its size at 1,000, and no node of a held
turn's statements reading every message or record; the whole turn's figures at the top of the
JSON, named as the README's table names them; the report's CPU per request; the single-client
rounds merged; and the benchmark's databases named after a linked worktree. Pure: figures are
given, nothing is timed."""

import zlib

from bench import report, single
from bench import targets as bench_targets
from bench.__main__ import lift
from bench.db import checkout_suffix

LONG = "the 5,000-message conversation <= 1.2x the 100-message one"
BYTES = "plan bytes at 10,000 memories <= 1.2x those at 1,000"
EXPLAIN = "EXPLAIN: no node of a held turn's statements reads every message"


def _drive(per_s, p50, errors=0, cpu=None, **extra):
    return {
        "clients": 8,
        "seconds": 10.0,
        "per_second": per_s,
        "p50_ms": p50,
        "p95_ms": p50,
        "p99_ms": p50,
        "errors": errors,
        "units": 100,
        "error_samples": [],
        **({"cpu_ms_per_request": {"app": cpu[0], "db": cpu[1]}} if cpu else {}),
        **extra,
    }


def _single(p50, errors=0, start=116):
    return _drive(20.0, p50, errors, messages_start=start, messages_end=start + 200, rounds=4)


def _turns(long_p50=44.0, short_p50=40.0, bytes_1k=20_000, bytes_10k=24_000, errors=0):
    sizes = {
        str(n): {
            "one_trip": _drive(40.0, 150.0, cpu=(6.0, 2.0)),
            "single_client": _single(short_p50, errors if n == 1000 else 0),
            "plan_bytes": b,
        }
        for n, b in ((1000, bytes_1k), (10000, bytes_10k))
    }
    return {
        "db": "postgres",
        "server_version": "PostgreSQL 15",
        "server": "gunicorn",
        "clients": 8,
        "ping_before": _drive(1000.0, 5.0, cpu=(0.5, 0.0)),
        "ping_after": _drive(1000.0, 5.0, cpu=(0.5, 0.0)),
        "ping_auth": _drive(800.0, 6.0, cpu=(0.75, 0.25)),
        "ping_rps": 1000.0,
        "turns": _drive(30.0, 250.0, cpu=(9.0, 4.0)),
        "turns_per_ping": 0.03,
        "sizes": sizes,
        "main_size": 1000,
        "records_per_user": 1000,
        "long_messages": 5000,
        "long_conversation": {
            "records": 1000,
            "plan_bytes": 21_000,
            "single_client": _single(long_p50, start=5_016),
        },
    }


def _explain(everything=()):
    case = {
        "records": 1000,
        "messages": 5000,
        "context_records": 620,
        "statements": 6,
        "first_statements": 7,
        "facts": 1,
        "everything": list(everything),
        "most_read": {"conversations_message": 3, "memory_memoryrecord": 2},
        "file": "postgres-turn-explain-1000r-5000m.txt",
    }
    profile = {
        "records": 1000,
        "messages": 5000,
        "turns": 30,
        "cpu_ms_per_turn_profiled": 61.5,
        "file": "postgres-turn-cpu-1000r-5000m.txt",
    }
    return {
        "db": "postgres",
        "server_version": "PostgreSQL 15",
        "explain": [case],
        "profile": [profile],
    }


def _rows(results) -> dict[str, dict]:
    return {
        name: row
        for row in bench_targets.targets(results)
        for name in (LONG, BYTES, EXPLAIN)
        if row["target"].startswith(name)
    }


def test_it_passes_the_long_conversation_at_exactly_one_point_two_times_and_misses_above():
    for long_p50, result in ((48.0, "pass"), (48.1, "MISS")):
        row = _rows({"databases": [], "turns": _turns(long_p50=long_p50)})[LONG]
        assert row["result"] == result, row
        assert (
            f"p50 {long_p50:.1f} ms (5,016→5,216 messages) vs 40.0 ms (116→316)" in row["measured"]
        )
        assert "plan answer 21,000 bytes vs 20,000 bytes" in row["measured"]
    row = _rows({"databases": [], "turns": _turns(long_p50=30.0, errors=2)})[LONG]
    assert row["result"] == "MISS" and "2 errors" in row["measured"]


def test_it_judges_the_plan_bytes_of_ten_thousand_memories_against_one_thousand():
    for high, result in ((24_000, "pass"), (24_001, "MISS")):
        row = _rows({"databases": [], "turns": _turns(bytes_10k=high)})[BYTES]
        assert row["result"] == result, row
        assert f"{high:,} bytes vs 20,000 bytes = " in row["measured"]
    turns = _turns()
    del turns["sizes"]["10000"]
    assert _rows({"databases": [], "turns": turns})[BYTES]["result"] == "skipped"


def test_it_misses_the_explain_check_on_any_statement_reading_everything():
    rows = _rows({"databases": [], "turns": _turns(), "explain": _explain()})
    assert rows[EXPLAIN]["result"] == "pass"
    assert rows[EXPLAIN]["measured"] == "1 cases (1,000/5,000), 6 statements; none reads all"
    found = "statement 3 (create with plan, SELECT …): conversations_message 5,002"
    row = _rows({"databases": [], "explain": _explain([found])})[EXPLAIN]
    assert row["result"] == "MISS" and found in row["measured"]
    assert _rows({"databases": []})[EXPLAIN]["result"] == "skipped"


def test_it_counts_the_long_conversation_in_every_phase_s_zero_errors():
    turns = _turns()
    turns["long_conversation"]["single_client"]["errors"] = 1
    zero = next(
        r
        for r in bench_targets.targets({"databases": [], "turns": turns})
        if r["target"].startswith("whole turn: zero errors")
    )
    assert zero["result"] == "MISS"
    assert "one round trip, 1 client, long conversation: 1" in zero["measured"]


def test_it_lifts_the_whole_turn_to_the_top_of_the_json_where_the_targets_read_it():
    turns = _turns()
    del turns["db"], turns["server_version"]
    outcome = {"db": "postgres", "server_version": "PostgreSQL 15", "turns": turns}
    results = {"databases": [outcome]}
    lift(results, outcome, "turns")
    assert "turns" not in outcome
    assert results["turns"]["long_conversation"]["single_client"]["p50_ms"] == 44.0
    assert results["turns"]["sizes"]["1000"]["plan_bytes"] == 20_000
    assert (results["turns"]["db"], results["turns"]["server_version"]) == (
        "postgres",
        "PostgreSQL 15",
    )
    assert _rows(results)[LONG]["result"] == "pass"


def test_it_reports_cpu_per_request_and_a_turn_s_cpu_against_an_authenticated_ping():
    results = {
        "databases": [{"db": "postgres", "server_version": "PostgreSQL 15"}],
        "turns": _turns(),
        "explain": _explain(),
        "meta": {
            "command": "python -m bench",
            "started": "now",
            "machine": "2 CPUs",
            "load_start": "1.0",
            "load_end": "1.0",
            "how": "how",
            "seconds": 1.0,
        },
    }
    results["targets"] = bench_targets.targets(results)
    for markdown in (False, True):
        text = report.render(results, markdown=markdown)
        # Two requests of 6 + 2 ms against a ping's 0.75 + 0.25 ms.
        assert (
            "a one-round-trip turn at 1,000 memories from 8 clients (two requests) 16.00 ms "
            "(app 12.00 + database 4.00) = 16.0x an authenticated ping's 1.00 ms" in text
        )
        assert "1,000 memories 20,000; 10,000 memories 24,000; 1,000 memories on the " in text
        [line] = [x for x in text.splitlines() if "on a 5,000-message conversation" in x]
        assert "(5,016→5,216 messages)" in line
        assert "postgres-turn-explain-1000r-5000m.txt" in text
        assert "61.5 ms of CPU a turn under cProfile (30 turns)" in text
        [auth] = [x for x in text.splitlines() if "authenticated DRF JSON" in x]
        assert "0.75" in auth and "0.25" in auth  # app and db ms per request, then 0 errors
        assert auth.rstrip(" |").endswith("0")


def test_it_merges_the_rounds_of_a_single_client_into_one_figure():
    drives = [
        {"clients": 1, "seconds": 1.0, "units": 2, "errors": 0, "error_samples": [],
         "latencies_s": [0.010, 0.030]},
        {"clients": 1, "seconds": 2.0, "units": 1, "errors": 1, "error_samples": ["reply 500"],
         "latencies_s": [0.020, 0.040]},
    ]  # fmt: skip
    merged = single.merged(drives)
    assert (merged["units"], merged["errors"], merged["seconds"]) == (3, 1, 3.0)
    assert merged["p50_ms"] == 25.0 and merged["per_second"] == 1.0
    assert merged["error_samples"] == ["reply 500"]


def test_it_names_the_benchmark_databases_after_a_linked_worktree_only(tmp_path):
    main = tmp_path / "main"
    (main / ".git").mkdir(parents=True)
    assert checkout_suffix(main) == ""
    assert checkout_suffix(tmp_path) == ""  # no git at all: an unpacked tree
    tree = tmp_path / "Bench-Honest.2"
    tree.mkdir()
    (tree / ".git").write_text("gitdir: /work/main/.git/worktrees/bench-honest\n")
    crc = zlib.crc32(str(tree).encode()) & 0xFFFFFF
    assert checkout_suffix(tree) == f"_bench_honest_2_{crc:06x}"
