"""The benchmark harness: `python -m bench` (full run, several minutes) or
`python -m bench --smoke` (CI: seconds, tiny sizes, no thresholds).

Runs, in one process tree and one run so the numbers are comparable as ratios:

1. the pure resolver at N = 1k / 10k / 100k records (records per second, best of several
   runs) and one hot slot of 20k versions against 20k records over 2k slots;
2. `POST /api/v1/memory/resolve` and `GET /api/v1/turns/{id}/prompt-plan` end to end through
   Django (in-process `django.test.Client`, Bearer token) for users with 100 / 1k / 10k
   records and conversations with 100 / 10k messages, on SQLite and PostgreSQL, each beside
   its floor (raw cursor fetch of the same rows + the pure resolver, projection, planner),
   with SQL query counts and tracemalloc peaks;
3. on PostgreSQL, the whole turn against gunicorn beside the same server's trivial JSON
   endpoint as the ceiling and the authenticated one: the three-request turn (create → plan
   → reply) from 8 client threads at 1,000 memories, and the one round trip (create with plan
   → reply) from 8 threads at 100, 1,000 and 10,000 memories per user and from one on a
   fresh 100-message conversation no other phase grows (`bench.single`; at 1,000 memories in
   alternating rounds with the same turn on a 5,000-message conversation); each size's plan
   answer in bytes; every 8-client phase's server CPU per request, the gunicorn workers' and
   the database backends' (`bench.cpu`); SQL statements per step counted in a warm process;
   beside them, the turn's floor (`bench.floor`: the statements one turn issues, captured
   through Django and replayed on a raw psycopg connection, plus its `turns.pipeline` calls
   on the same inputs), and the one round trip through PgBouncer in transaction pooling
   (`bench.pgbouncer`; a gunicorn with DATABASE_POOLER=pgbouncer), 8 clients and one;
4. the relevance order (I6): the quality check of `bench.relevance` (300 memories over 30
   topics, a memory share that fits about 10 items: how many admitted memories are about
   the message's topic, under `relevance` and under `certainty`), and on each database the
   plan endpoint's p50 under `relevance` against `certainty` for a user with 1,000 memories;
5. on PostgreSQL, `recall` through `/mcp` (`bench.mcp`): a user with 1,000 memories and a read
   connection, recall alternating with `POST /memory/resolve` from one client on the same
   gunicorn (p50 of each and their ratio), then recall from 8 client threads (calls/s, errors);
6. on PostgreSQL, the turn's statements under EXPLAIN (ANALYZE, BUFFERS) and the turn under
   cProfile at 1,000 and 10,000 memories × 100 and 5,000 messages (`bench.explain`; sections
   `explain` and `profile`): text files in bench/profiles/ (a smoke run: bench/results/
   profiles/), and the check that no node of a held turn reads every message or record (I9).

Each database runs in its own worker process (`bench.worker`) on its own database: a
temporary SQLite file, or `companion_bench` on PostgreSQL (created and dropped; in a linked git
worktree its name carries the worktree's, `bench.db.checkout_suffix`; set
BENCH_POSTGRES=postgres://user@host:port to point elsewhere). The table is printed; JSON
goes to bench/results/latest.json (smoke: bench/results/smoke.json) and a full run also
rewrites bench/RESULTS.md up to its hand-written sections (`report.KEPT_FROM` and everything
after it stay as they are). Targets are reported as pass/MISS, never enforced: the exit
status is non-zero only when the harness itself fails. A phase with any error (a non-2xx
answer, a 429, an exception) misses its target whatever its speed, and the table says how
many errors it had.

`--populated` (opt-in: the first build takes minutes) adds the populated database of
`bench.populated`: 1,000 users with 1,000 memories each in `companion_bench_pop`, built once
and reused, where the single-client turn is compared with the same turn in the empty
database and every statement of the turn is shown under EXPLAIN (ANALYZE, BUFFERS).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
BASE_DIR = BENCH_DIR.parent

FULL = {
    "pure_sizes": [1_000, 10_000, 100_000],
    "slot_n": 20_000,
    "records": [100, 1_000, 10_000],
    "messages": [100, 10_000],
    "case": {"min_calls": 30, "max_calls": 300, "seconds": 8.0, "warmup": 3},
    "turn_seconds": 20.0,
    "lock_wait": 600.0,
    "relevance_memories": 1_000,
    "relevance_seeds": 10,
    "turn_sizes": [100, 1_000, 10_000],
    "forget_messages": 10_000,
    "forget_rounds": 15,
    "feed_events": 1_000_000,
    "feed_calls": 50,
    # The turn's floor: rounds of floor turns, each followed by the single-client turn.
    "floor": {"rounds": 6, "turns_per_round": 10, "seconds_per_round": 4.0},
    "mcp_records": 1_000,
    "mcp_seconds": 10.0,
    # The single-client turn: turns per conversation, in alternating rounds (bench.single).
    "single_turns": 100,
    "single_rounds": 4,
    "long_messages": 5_000,
    # The turn's EXPLAIN and profile (bench.explain): memory sizes, turns profiled.
    "explain_records": [1_000, 10_000],
    "profile_turns": 30,
}
SMOKE = {
    "pure_sizes": [1_000],
    "slot_n": 2_000,
    "records": [100],
    "messages": [100],
    "case": {"min_calls": 5, "max_calls": 20, "seconds": 0.5, "warmup": 1},
    "turn_seconds": 2.0,
    "lock_wait": 15.0,
    "relevance_memories": 100,
    "relevance_seeds": 2,
    "turn_sizes": [100],
    "forget_messages": 200,
    "forget_rounds": 3,
    "feed_events": 2_000,
    "feed_calls": 5,
    "floor": {"rounds": 2, "turns_per_round": 3, "seconds_per_round": 0.5},
    "mcp_records": 100,
    "mcp_seconds": 1.0,
    "single_turns": 4,
    "single_rounds": 2,
    "long_messages": 300,
    "explain_records": [100],
    "profile_turns": 2,
}
SECTIONS = (
    "pure",
    "endpoints",
    "turns",
    "relevance",
    "forget",
    "feed",
    "mcp",
    "explain",
    "profile",
)
# A smoke run's EXPLAIN and profile files stay out of the tracked bench/profiles/.
PROFILES = {"full": BENCH_DIR / "profiles", "smoke": BENCH_DIR / "results" / "profiles"}
TURN_CLIENTS = 8
TURN_WORKERS = 4
TURN_RECORDS = 1_000
SEED = 20261101
# The populated database (`--populated`): users × memories and messages each, built once.
POPULATED = {"users": 1_000, "memories": 1_000, "messages": 200}
POPULATED_SMOKE = {"users": 20, "memories": 100, "messages": 50}

HOW = (
    "How: the pure resolver runs in the harness process on generated `memory.domain` records "
    "(best wall time of several runs, `time.perf_counter`). The endpoints run in-process "
    "through `django.test.Client` with a Bearer token (full Django + DRF request path, no "
    "socket); each timed call alternates with a call of the floor (raw cursor with the "
    "selector's WHERE + pure resolver, projection and planner), so ratio = endpoint p50 / "
    "floor p50. Query counts: `CaptureQueriesContext`; peaks: `tracemalloc` during one call. "
    "The pure resolver is timed with the collector paused (as a request runs it), on and with "
    "its input frozen, beside a linear control loop over the same records, and beside a "
    "plain resolver of the same rules (`bench.pure.plain_resolve`, same answer checked first; "
    "calls alternate, collector paused; ratio = median / median). "
    "The whole turn runs against a real gunicorn (sync workers, CONN_MAX_AGE=60) on "
    "127.0.0.1 with 8 client threads (`http.client`) and with one, one user and conversation "
    "per thread (100, 1,000 and 10,000 records each); the trivial endpoint `/bench/ping` (a "
    "Django view returning JSON, same middleware) is measured before and after on the same "
    "server. The runtime throttle counts every request but its limit is raised "
    "(THROTTLE_RUNTIME=1000000/min) so the limit, sized for one runtime, is not what is "
    "measured; any non-2xx answer (a 429 included) or exception is an error, and a phase with "
    "errors misses its target. The turn's floor: each floor turn runs once through Django "
    "in-process inside a rolled-back transaction (statements and their parameters recorded by "
    "`connection.execute_wrapper`, calls into `turns.pipeline` with their inputs), then its "
    "statements run on a raw psycopg connection (Django's connection parameters; the turn's "
    "transactions as BEGIN … COMMIT; every row fetched) and its pure calls again: floor = that "
    "SQL + pure time, p50 over the floor turns, which alternate in rounds with the single-client "
    "turn on the same conversation (its own gunicorn): the target compares the two. The PgBouncer "
    "phase: a second gunicorn with "
    "DATABASE_POOLER=pgbouncer through a PgBouncer on 127.0.0.1 (transaction pooling, 2 server "
    "connections). The MCP phase: a gunicorn of its own (THROTTLE_CONNECTION raised like the "
    "runtime's), one stateless JSON-RPC `tools/call` of `recall` per request (no `initialize`), "
    "alternating with `POST /memory/resolve` on one client connection; then recall from 8 "
    "client threads; a non-2xx answer, a JSON-RPC error or a tool result with `isError` is an "
    "error. "
    "The single-client turn at each size runs on a conversation of its own, fresh (100 "
    "messages) and touched by no other phase, for a fixed number of turns after one warm-up "
    "turn from each of 8 threads (the conversation grows two messages a turn: the table says "
    "from how many to how many); at 1,000 memories its rounds alternate with the same turn on a "
    "5,000-message conversation of a user with the same memories. Plan bytes: the median JSON "
    "body of those create-with-plan answers. Server CPU per request: utime + stime from "
    "/proc/<pid>/stat of the gunicorn master's children and of the PostgreSQL backends of the "
    "benchmark database (pids from pg_stat_activity), sampled every 0.5 s over the phase, "
    "divided by the requests it completed (a turn of the one round trip is two requests)."
)


def log(message: str = "") -> None:
    print(message, flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds (CI)")
    parser.add_argument(
        "--db",
        choices=["sqlite", "postgres", "both"],
        default="both",
        help="databases for the endpoint benchmarks (default: both; PostgreSQL is "
        "skipped with a note when it is not reachable)",
    )
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help="comma-separated sections: " + ", ".join(SECTIONS),
    )
    parser.add_argument(
        "--turn-seconds",
        type=float,
        default=None,
        help="duration of the whole-turn measurement (0 skips it)",
    )
    parser.add_argument("--out", default=None, help="JSON output path")
    parser.add_argument(
        "--no-markdown",
        action="store_true",
        help="do not rewrite bench/RESULTS.md after a full run",
    )
    parser.add_argument(
        "--records",
        default=None,
        help="comma-separated record counts for the endpoints (overrides the size)",
    )
    parser.add_argument(
        "--messages", default=None, help="comma-separated message counts for the plan endpoint"
    )
    parser.add_argument(
        "--populated",
        action="store_true",
        help="also measure the single-client turn in a populated PostgreSQL "
        "database (built once, then reused; see bench.populated)",
    )
    parser.add_argument(
        "--turn-sizes",
        default=None,
        help="comma-separated memory counts for the whole-turn measurement and for the turn's "
        "EXPLAIN and profile",
    )
    parser.add_argument(
        "--pure-sizes", default=None, help="comma-separated N for the pure resolver"
    )
    return parser.parse_args(argv)


def machine() -> str:
    return (
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )


def loadavg() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def run_worker(vendor: str, config: dict, timeout: float) -> dict:
    with tempfile.NamedTemporaryFile(prefix="bench-", suffix=".json", delete=False) as fh:
        out_path = fh.name
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", vendor, json.dumps(config), out_path],
            cwd=BASE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        # A watchdog bounds the worker even when it stops printing.
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.daemon = True
        watchdog.start()
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log(line.rstrip())
            proc.wait()
        finally:
            watchdog.cancel()
        try:
            with open(out_path) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return {"db": vendor, "error": f"worker exited with {proc.returncode} and no results"}
    finally:
        try:
            os.unlink(out_path)
        except OSError:
            pass


def lift_mcp(results: dict, outcome: dict) -> None:
    """The MCP phase runs on PostgreSQL only: its figures go to the top of the JSON
    (`mcp.recall.p50_ms`, `mcp.eight_clients.errors`, ...), where the targets read them."""
    lift(results, outcome, "mcp")


def lift(results: dict, outcome: dict, section: str) -> None:
    """A PostgreSQL-only section's figures go to the top of the JSON (`turns.sizes[1000]
    .single_client.p50_ms`, `explain.explain[0].everything`, ...), named as the README's table
    names them; the targets and the report read them there."""
    if section in outcome:
        results[section] = {
            "db": outcome["db"],
            "server_version": outcome.get("server_version"),
            **outcome.pop(section),
        }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, str(BASE_DIR))
    os.chdir(BASE_DIR)
    sizes, custom = _sizes(args)
    sections = {s.strip() for s in args.only.split(",") if s.strip()}
    command = _command(args, sections, custom)
    started = time.perf_counter()
    results: dict = {
        "meta": {
            "command": command,
            "smoke": args.smoke,
            "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "load_start": loadavg(),
            "how": HOW,
            "sizes": sizes,
        },
        "databases": [],
    }
    log(f"{command}: {results['meta']['machine']}, load {results['meta']['load_start']}")
    failed = False

    if "pure" in sections:
        _run_pure(results, sizes)
    if "relevance" in sections:
        _run_relevance_quality(results, sizes)
    if set(SECTIONS[1:]) & sections:
        failed = _run_databases(args, sections, sizes, results)

    from . import report, targets

    results["meta"]["load_end"] = loadavg()
    results["meta"]["seconds"] = time.perf_counter() - started
    results["targets"] = targets.targets(results)
    log(report.render(results, markdown=False))
    _write(args, results, custom)
    return 1 if failed else 0


def _sizes(args) -> tuple[dict, bool]:
    """The run's sizes: the smoke's or the full run's, with any given on the command line
    (then the sizes are custom)."""
    sizes = dict(SMOKE if args.smoke else FULL)
    custom = False
    for name in ("records", "messages", "pure_sizes", "turn_sizes"):
        value = getattr(args, name)
        if value:
            sizes[name] = [int(x) for x in value.split(",") if x.strip()]
            custom = True
    if args.turn_sizes:
        sizes["explain_records"] = sizes["turn_sizes"]
    return sizes, custom


def _command(args, sections: set[str], custom: bool) -> str:
    """The command line as the results name it."""
    return (
        "python -m bench"
        + (" --smoke" if args.smoke else "")
        + (f" --db {args.db}" if args.db != "both" else "")
        + (f" --only {args.only}" if sections != set(SECTIONS) else "")
        + (" --populated" if args.populated else "")
        + (" (custom sizes)" if custom else "")
    )


def _run_pure(results: dict, sizes: dict) -> None:
    from . import pure

    log("pure resolver")
    results["pure"] = pure.run(sizes["pure_sizes"], sizes["slot_n"], log)
    results["meta"]["calibration_mops"] = results["pure"]["calibration_mops"]


def _run_relevance_quality(results: dict, sizes: dict) -> None:
    from . import relevance

    log("relevance quality (pure planner)")
    started_quality = time.perf_counter()
    results["relevance_quality"] = {
        **relevance.quality(),
        "over_seeds": relevance.quality_over_seeds(sizes["relevance_seeds"]),
    }
    q = results["relevance_quality"]
    log(
        f"  {q['topics_meeting_target']}/{q['topics']} topics with >= {q['target']} of the "
        f"admitted memories about the topic (relevance mean {q['relevance_mean']:.1f}, "
        f"certainty mean {q['certainty_mean']:.1f}) in "
        f"{time.perf_counter() - started_quality:.1f}s"
    )


def _run_databases(args, sections: set[str], sizes: dict, results: dict) -> bool:
    """The database sections, in one worker per database (PostgreSQL skipped, and said so,
    when it cannot be reached; SQLite only for the sections it serves). True when a worker
    failed."""
    from .db import postgres_reachable

    turn_seconds = sizes["turn_seconds"] if args.turn_seconds is None else args.turn_seconds
    vendors = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    pg_ok, pg_note = postgres_reachable()
    results["meta"]["postgres"] = pg_note
    failed = False
    for vendor in vendors:
        if vendor == "postgres" and not pg_ok:
            log(f"postgres: skipped ({pg_note})")
            results["databases"].append({"db": "postgres", "skipped": f"not reachable: {pg_note}"})
            continue
        if not {"endpoints", "relevance", "forget", "feed"} & sections and vendor != "postgres":
            continue
        config = _worker_config(args, sections, sizes, turn_seconds)
        log(
            f"{vendor}: endpoints"
            + (" and whole turn" if vendor == "postgres" and config["turn_seconds"] else "")
        )
        timeout = 300 if args.smoke else (3000 if args.populated else 1800)
        outcome = run_worker(vendor, config, timeout=timeout)
        failed |= "error" in outcome
        results["databases"].append(outcome)
        lift_mcp(results, outcome)
        lift(results, outcome, "turns")
        lift(results, outcome, "explain")
    return failed


def _worker_config(args, sections: set[str], sizes: dict, turn_seconds: float) -> dict:
    """What a database worker measures, and at which sizes: a section left out runs at size
    0 (or not at all)."""
    return {
        "seed": SEED,
        "records": sizes["records"] if "endpoints" in sections else [],
        "messages": sizes["messages"],
        "case": sizes["case"],
        "turn_seconds": turn_seconds if "turns" in sections else 0,
        "turn_clients": TURN_CLIENTS,
        "turn_workers": TURN_WORKERS,
        "turn_sizes": sizes["turn_sizes"],
        "turn_main": TURN_RECORDS
        if TURN_RECORDS in sizes["turn_sizes"]
        else sizes["turn_sizes"][0],
        "populated": args.populated,
        "populated_spec": POPULATED if not args.smoke else POPULATED_SMOKE,
        "populated_round_s": 0.5 if args.smoke else 3.0,
        "populated_rounds": 2 if args.smoke else 8,
        "lock_wait": sizes["lock_wait"],
        "relevance_memories": sizes["relevance_memories"] if "relevance" in sections else 0,
        "forget_messages": sizes["forget_messages"] if "forget" in sections else 0,
        "forget_rounds": sizes["forget_rounds"],
        "feed_events": sizes["feed_events"] if "feed" in sections else 0,
        "feed_calls": sizes["feed_calls"],
        "floor_rounds": sizes["floor"]["rounds"] if "turns" in sections else 0,
        "floor_turns_per_round": sizes["floor"]["turns_per_round"],
        "floor_seconds_per_round": sizes["floor"]["seconds_per_round"],
        "pgbouncer": True,
        "mcp_records": sizes["mcp_records"] if "mcp" in sections else 0,
        "mcp_seconds": sizes["mcp_seconds"],
        "single_turns": sizes["single_turns"],
        "single_rounds": sizes["single_rounds"],
        "long_messages": sizes["long_messages"],
        "explain": "explain" in sections,
        "explain_records": sizes["explain_records"],
        "profile_turns": sizes["profile_turns"] if "profile" in sections else 0,
        "profiles_dir": str(PROFILES["smoke" if args.smoke else "full"]),
    }


def _write(args, results: dict, custom: bool) -> None:
    """The results as JSON, and for a full run at the default sizes, bench/RESULTS.md too."""
    from . import report

    out = (
        Path(args.out)
        if args.out
        else BENCH_DIR / "results" / ("smoke.json" if args.smoke else "latest.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=str))
    log(f"JSON: {out}")
    if not args.smoke and not args.no_markdown and not custom and args.out is None:
        path = BENCH_DIR / "RESULTS.md"
        path.write_text(
            report.render(results, markdown=True)
            + report.kept_sections(path.read_text() if path.exists() else "")
        )
        log(f"Markdown: {BENCH_DIR / 'RESULTS.md'}")


if __name__ == "__main__":
    sys.exit(main())
