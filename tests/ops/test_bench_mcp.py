"""bench/mcp.py and its targets (SPEC §15 M2–M3, issue targets reported by `make bench`, never
timed tests): `recall` through `/mcp` at 1,000 memories passes at a p50 of at most 2× the
`/memory/resolve` endpoint's in the same run, 8 clients calling it pass with zero errors, and
a phase with any error (a non-2xx answer, a JSON-RPC or tool error, an exception) misses its
target whatever its speed. Pure: figures are given, nothing is timed."""

import json

from bench import report
from bench import targets as bench_targets
from bench.__main__ import lift_mcp
from bench.mcp import recall_body, recall_outcome

RATIO = "MCP recall p50 <= 2x POST /memory/resolve's"
EIGHT = "MCP recall from 8 clients: zero errors"


def _single(p50, errors=0):
    return {"calls": 200, "p50_ms": p50, "p95_ms": p50, "errors": errors, "error_samples": []}


def _mcp(recall_p50=20.0, resolve_p50=10.0, records=1000, errors=None, eight_units=800):
    errors = errors or {}
    recall = _single(recall_p50, errors.get("recall", 0))
    recall["ratio"] = recall_p50 / resolve_p50
    recall["memories"] = 20
    return {
        "db": "postgres",
        "server": "gunicorn",
        "records": records,
        "recall": recall,
        "resolve": _single(resolve_p50, errors.get("resolve", 0)),
        "eight_clients": {
            "clients": 8,
            "seconds": 10.0,
            "units": eight_units,
            "per_second": eight_units / 10.0,
            "p50_ms": 70.0,
            "p95_ms": 90.0,
            "p99_ms": 99.0,
            "errors": errors.get("eight", 0),
            "error_samples": [],
        },
    }


def _rows(mcp) -> dict[str, dict]:
    results = {"databases": []}
    if mcp is not None:
        results["mcp"] = mcp
    return {
        name: row
        for row in bench_targets.targets(results)
        for name in (RATIO, EIGHT)
        if row["target"].startswith(name)
    }


def test_it_passes_recall_at_exactly_twice_the_resolve_p50_and_misses_it_just_above():
    """§15 M3 target: recall p50 <= 2x resolve's at 1,000 memories, same run."""
    at = _rows(_mcp(recall_p50=20.0, resolve_p50=10.0))
    assert at[RATIO]["result"] == "pass"
    assert "20.0 vs 10.0 ms = 2.00x at 1,000 memories" in at[RATIO]["measured"]
    over = _rows(_mcp(recall_p50=20.1, resolve_p50=10.0))
    assert over[RATIO]["result"] == "MISS"


def test_it_misses_the_recall_ratio_on_an_error_in_recall_or_resolve_whatever_its_speed():
    """A phase with any error misses its target: a fast recall with one failed call misses."""
    for phase in ("recall", "resolve"):
        row = _rows(_mcp(recall_p50=5.0, resolve_p50=10.0, errors={phase: 1}))[RATIO]
        assert row["result"] == "MISS" and "1 error)" in row["measured"], (phase, row)


def test_it_passes_eight_clients_only_with_zero_errors_and_some_calls():
    """§15 M2 target: 8 clients calling recall, zero errors (a run of no calls proves nothing)."""
    assert _rows(_mcp())[EIGHT]["result"] == "pass"
    one = _rows(_mcp(errors={"eight": 1}))[EIGHT]
    assert one["result"] == "MISS" and one["measured"].startswith("1 error in 800 calls; 80.0")
    assert _rows(_mcp(eight_units=0))[EIGHT]["result"] == "MISS"


def test_it_does_not_judge_the_ratio_of_a_smoke_run_below_1000_memories():
    """The ratio's target is stated at 1,000 memories; the smoke's 100 are shown, not judged."""
    rows = _rows(_mcp(recall_p50=50.0, resolve_p50=10.0, records=100))
    assert rows[RATIO]["result"] == "skipped" and "at 100 memories" in rows[RATIO]["measured"]
    assert rows[EIGHT]["result"] == "pass"


def test_it_reports_both_targets_as_not_run_without_the_phase():
    """A run without the mcp phase (`--only` without it, or no PostgreSQL) judges neither."""
    rows = _rows(None)
    assert [(r["measured"], r["result"]) for r in rows.values()] == [("not run", "skipped")] * 2


def test_it_lifts_the_postgres_phase_to_the_top_of_the_json_and_renders_its_lines():
    """`mcp.recall.p50_ms`, `mcp.resolve.p50_ms`, `mcp.recall.ratio`, `mcp.eight_clients.errors`
    in the JSON; pass/MISS lines in the printed report and the Markdown."""
    phase = _mcp(recall_p50=30.0, resolve_p50=10.0, errors={"eight": 2})
    del phase["db"]
    outcome = {"db": "postgres", "mcp": phase}
    results = {"databases": [outcome]}
    lift_mcp(results, outcome)
    assert "mcp" not in outcome and results["mcp"]["db"] == "postgres"
    mcp = json.loads(json.dumps(results))["mcp"]
    assert (mcp["recall"]["p50_ms"], mcp["resolve"]["p50_ms"], mcp["recall"]["ratio"]) == (
        30.0,
        10.0,
        3.0,
    )
    assert mcp["eight_clients"]["errors"] == 2
    results["meta"] = {
        "command": "python -m bench --only mcp",
        "started": "now",
        "machine": "2 CPUs",
        "load_start": "1.0",
        "load_end": "1.0",
        "how": "how",
        "seconds": 1.0,
    }
    results["targets"] = bench_targets.targets(results)
    for markdown in (False, True):
        lines = report.render(results, markdown=markdown).splitlines()
        ratio = [line for line in lines if RATIO in line]
        eight = [line for line in lines if EIGHT in line]
        assert len(ratio) == 1 and "3.00x" in ratio[0] and "MISS" in ratio[0]
        assert len(eight) == 1 and "2 errors in 800 calls" in eight[0] and "MISS" in eight[0]


def _answer(result) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()


def test_it_counts_a_recall_as_good_only_on_a_200_with_its_memories():
    """§15 M2–M3: a non-2xx answer, a JSON-RPC error, a tool result with isError or an answer
    without `memories` is an error of the phase."""
    good = _answer({"content": [], "structuredContent": {"memories": [{"id": "a"}, {"id": "b"}]}})
    assert recall_outcome(200, good) == (2, None)
    refused = [
        (429, b'{"code": "throttled"}'),
        (401, b""),
        (200, b"not json"),
        (200, b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}'),
        (200, _answer({"isError": True, "content": [{"type": "text", "text": "not_found"}]})),
        (200, _answer({"content": []})),
    ]
    for status, data in refused:
        count, why = recall_outcome(status, data)
        assert count == 0 and why, (status, data)


def test_it_asks_recall_with_one_stateless_tools_call():
    """§15 M2: stateless, so a `tools/call` needs no `initialize` first."""
    body = json.loads(recall_body("captain-rowan", "c0ffee00-0000-4000-8000-000000000000"))
    assert body == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "recall",
            "arguments": {
                "character": "captain-rowan",
                "conversation": "c0ffee00-0000-4000-8000-000000000000",
            },
        },
    }
