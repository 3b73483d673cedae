"""Targets (compared, never asserted) and the tables: plain text for the terminal, Markdown
for bench/RESULTS.md."""

from __future__ import annotations

import math

PURE_RPS_TARGET = 1_000_000
SCALING_TARGET = 12.0
HOT_TOLERANCE = 1.10  # "no slower": within 10% measurement noise
OVERHEAD_TARGET = 2.0
TURN_SHARE_TARGET = 0.25
RELEVANCE_COST_TOLERANCE = 1.10  # relevance p50 within 10% of certainty's
RELEVANCE_MEMORIES = 1_000
# The turn path's targets.
TURN_SHARE_AUTH_TARGET = 0.15  # 8-client one-round-trip turns/s ÷ the authenticated ping's req/s
AUTH_PING_SHARE_TARGET = 0.50  # authenticated ping req/s ÷ the trivial ping's
TURN_SQL_TARGET = 12  # queries per whole turn (create with plan + reply), warm process
# Single-client one round trip + reply p50 (ms) by memories per user, gunicorn + PostgreSQL.
SINGLE_P50_TARGETS_MS = {1_000: 15.0, 10_000: 40.0}
ENDPOINT_SIZES = (100, 1_000)  # resolve and plan <= 2x floor at these record counts
FLOOR_RATIO_AT_1K = 1.5  # resolve and plan <= 1.5x floor at 1,000 records
POPULATED_TOLERANCE = 1.20  # the turn in the populated database within 20% of the empty one's
TURN_FLOOR_RATIO = 1.5  # single-client turn p50 <= 1.5x its floor (bench.floor), same run


def errors_of(*phases: dict | None) -> int:
    """Errors (non-2xx answers, 429s, exceptions) counted in the phases a target rests on."""
    return sum(int(p.get("errors", 0)) for p in phases if p)


def verdict(ok: bool, *phases: dict | None) -> bool:
    """A phase with any error misses its target whatever its speed."""
    return ok and errors_of(*phases) == 0


def _errors_text(*phases: dict | None) -> str:
    n = errors_of(*phases)
    return f"{n:,} error{'s' if n != 1 else ''}"


def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if abs(value) >= 10_000:
            return f"{value:,.0f}"
        return f"{value:,.{digits}f}"
    return str(value)


def targets(results: dict) -> list[dict]:
    """One row per target: what was measured and whether it passes."""
    rows: list[dict] = []

    def add(name: str, measured: str, ok: bool | None, note: str = "") -> None:
        rows.append({"target": name, "measured": measured,
                     "result": "skipped" if ok is None else ("pass" if ok else "MISS"),
                     "note": note})

    pure = results.get("pure") or {}
    by_n = {row["n"]: row for row in pure.get("sizes", [])}
    if 10_000 in by_n:
        row = by_n[10_000]
        add("pure resolver >= 1,000,000 records/s at N=10k",
            f"{row['records_per_s']:,.0f} records/s ({row['records_per_cpu_s']:,.0f} per CPU-second)",
            row["records_per_s"] >= PURE_RPS_TARGET)
    else:
        add("pure resolver >= 1,000,000 records/s at N=10k", "not run at N=10k", None)
    if "scaling_100k_10k" in pure:
        by = pure.get("scaling_by_regime")
        add("t(100k) / t(10k) <= 12 (CPU time, collector paused as in a request)",
            f"{pure['scaling_100k_10k_cpu']:.1f} (wall {pure['scaling_100k_10k']:.1f}"
            + (f"; CPU with the collector on {by['enabled']:.1f}, input frozen "
               f"{by['frozen']:.1f}; a linear control loop over the same records "
               f"{by['control']:.1f}" if by else "") + ")",
            pure["scaling_100k_10k_cpu"] <= SCALING_TARGET)
    else:
        add("t(100k) / t(10k) <= 12 (CPU time, collector paused as in a request)",
            "not run at N=100k", None)
    slots = pure.get("slots")
    if slots:
        add("hot slot (one slot, n versions) no slower than n records over many slots",
            f"hot/spread = {slots['hot_over_spread']:.2f} at n={slots['hot']['n']:,}",
            slots["hot_over_spread"] <= HOT_TOLERANCE, "pass within 10% noise")

    cases = [c for db in results.get("databases", []) for c in db.get("cases", [])]
    big = [c for c in cases if c["records"] >= 1000]
    if big:
        worst = max(big, key=lambda c: c["ratio"])
        misses = [c for c in big if c["ratio"] > OVERHEAD_TARGET]
        add("resolve and plan endpoints <= 2x floor at 1k and 10k records",
            f"worst {worst['ratio']:.2f}x ({worst['db']} {worst['endpoint']} "
            f"{worst['records']:,} records{_msgs(worst)}); {len(misses)} of {len(big)} cases over",
            not misses)
    else:
        add("resolve and plan endpoints <= 2x floor at 1k and 10k records", "not run at 1k/10k", None)
    if cases:
        groups: dict[tuple, set] = {}
        for c in cases:
            groups.setdefault((c["db"], c["endpoint"]), set()).add(c["queries"])
        varying = {k: v for k, v in groups.items() if len(v) > 1}
        measured = "; ".join(f"{db} {ep}: {sorted(v)}" for (db, ep), v in sorted(groups.items()))
        add("query count constant in N (records and messages)", measured,
            not varying if len({c["records"] for c in cases}) > 1 else None)
        for row in _memory_rows(results):
            add(*row)
    turns_all = [db["turns"] for db in results.get("databases", []) if db.get("turns")]
    if turns_all:
        t = turns_all[0]
        phases = _phases(t)
        add("whole turn: zero errors in every load phase (non-2xx, 429, exceptions)",
            f"{_errors_text(*phases.values())} in {len(phases)} phases"
            + "".join(f"; {name}: {p['errors']:,}" for name, p in phases.items() if p["errors"]),
            errors_of(*phases.values()) == 0)
        add("whole turn: turns/s >= 25% of the trivial endpoint's requests/s",
            f"{t['turns']['per_second']:.1f} turns/s vs {t['ping_rps']:.0f} req/s = "
            f"{t['turns_per_ping'] * 100:.1f}% ({_errors_text(t['turns'], t['ping_before'], t['ping_after'])})",
            verdict(t["turns_per_ping"] >= TURN_SHARE_TARGET, t["turns"], t["ping_before"],
                    t["ping_after"]))
    else:
        add("whole turn (gunicorn + PostgreSQL)", "not run", None)
    _relevance_rows(results, add)
    _turn_rows(results, cases, turns_all[0] if turns_all else None, add)
    _forget_rows(results, add)
    _feed_rows(results, add)
    failed = [db["db"] for db in results.get("databases", []) if db.get("error")]
    add("harness: every database's phases ran to the end (no exception)",
        "exception on " + ", ".join(failed) if failed else "yes", not failed)
    return rows


def _phases(t: dict) -> dict[str, dict]:
    """Every load phase of a whole-turn measurement, by name."""
    phases = {"ping before": t["ping_before"], "authenticated ping": t["ping_auth"],
              "three-request turns": t["turns"], "ping after": t["ping_after"]}
    for n, size in (t.get("sizes") or {}).items():
        phases[f"one round trip, 8 clients, {int(n):,} memories"] = size["one_trip"]
        phases[f"one round trip, 1 client, {int(n):,} memories"] = size["single_client"]
    if not t.get("sizes") and t.get("one_trip"):
        phases["one round trip, 8 clients"] = t["one_trip"]
        phases["one round trip, 1 client"] = t["single_client"]
    if "errors" in (t.get("floor") or {}):  # the single-client turn in the floor's rounds
        phases["the turn beside its floor"] = t["floor"]
    pooled = t.get("pgbouncer") or {}
    if "errors" in pooled:  # its 8-client and single-client drives, errors of both
        phases["through PgBouncer"] = pooled
    return phases


def _turn_sizes(t: dict) -> dict[int, dict]:
    sizes = {int(n): v for n, v in (t.get("sizes") or {}).items()}
    if not sizes and t.get("one_trip"):
        sizes[int(t.get("records_per_user", 1_000))] = {"one_trip": t["one_trip"],
                                                        "single_client": t["single_client"]}
    return sizes


def _turn_rows(results: dict, cases: list[dict], t: dict | None, add) -> None:
    """The turn path's targets: latency a user waits for, throughput against the fixed cost
    of an authenticated request, statements per turn, the endpoints against their floor, and
    the populated database."""
    sizes = _turn_sizes(t) if t else {}
    for n, limit in SINGLE_P50_TARGETS_MS.items():
        name = (f"single-client turn p50 <= {limit:.0f} ms at {n:,} memories "
                "(one round trip + reply, gunicorn + PostgreSQL)")
        single = sizes.get(n, {}).get("single_client")
        if single:
            add(name, f"p50 {single['p50_ms']:.1f} ms, p99 {single['p99_ms']:.1f} ms "
                f"({single['units']:,} turns, {_errors_text(single)})",
                verdict(single["p50_ms"] <= limit, single))
        else:
            add(name, f"not run at {n:,} memories", None)
    name = ("8 clients: one-round-trip turns/s at 1,000 memories >= 15% of the authenticated "
            "ping's req/s, zero errors")
    main_size = int(t.get("main_size", t.get("records_per_user", 1_000))) if t else 0
    main = t and sizes.get(main_size)
    if main:
        one, auth = main["one_trip"], t["ping_auth"]
        share = one["per_second"] / auth["per_second"] if auth["per_second"] else 0.0
        add(name, f"{one['per_second']:.1f} turns/s vs {auth['per_second']:.0f} req/s = "
            f"{share * 100:.1f}% at {main_size:,} memories ({_errors_text(one, auth)})",
            verdict(share >= TURN_SHARE_AUTH_TARGET, one, auth) if main_size == 1_000 else None)
        ping = t["ping_rps"]
        share = auth["per_second"] / ping if ping else 0.0
        add("authenticated ping >= 50% of the trivial ping's req/s (same server, same run)",
            f"{auth['per_second']:.0f} vs {ping:.0f} req/s = {share * 100:.1f}% "
            f"({_errors_text(auth, t['ping_before'], t['ping_after'])})",
            verdict(share >= AUTH_PING_SHARE_TARGET, auth, t["ping_before"], t["ping_after"]))
    else:
        add(name, "not run", None)
    name = ("SQL per whole turn <= 12 (create with plan + reply; one fact, one logged "
            "decision, warm process)")
    q = (t or {}).get("queries")
    if q and "one_total" in q:
        add(name, f"{q['one_total']} (create with plan {q['create_plan']} with "
            f"{q['create_plan_facts']} fact, reply {q['reply_one']}"
            + (f"; a correction {q['create_plan_correction']} + reply"
               if "create_plan_correction" in q else "")
            + f"; three requests {q['total']})" + ("" if q.get("warm") else " (cold process)"),
            q["one_total"] <= TURN_SQL_TARGET and q.get("create_plan_facts") == 1
            if q.get("warm") else None)
    else:
        add(name, "not run", None)
    for limit, wanted_sizes, name in (
        (OVERHEAD_TARGET, ENDPOINT_SIZES, "resolve and plan endpoints <= 2x floor at 100 and "
         "1,000 records, SQLite and PostgreSQL"),
        (FLOOR_RATIO_AT_1K, (1_000,), "resolve and plan endpoints <= 1.5x floor at 1,000 "
         "records, SQLite and PostgreSQL"),
    ):
        wanted = [c for c in cases if c["records"] in wanted_sizes]
        if not wanted:
            add(name, "not run at " + " and ".join(f"{n:,}" for n in wanted_sizes) + " records",
                None)
            continue
        worst = max(wanted, key=lambda c: c["ratio"])
        misses = [c for c in wanted if c["ratio"] > limit]
        complete = ({c["db"] for c in wanted} == {"sqlite", "postgres"}
                    and {c["records"] for c in wanted} == set(wanted_sizes))
        add(name, f"worst {worst['ratio']:.2f}x ({worst['db']} {worst['endpoint']} "
            f"{worst['records']:,} records{_msgs(worst)}); {len(misses)} of {len(wanted)} cases over"
            + ("" if complete else " (not every database and size was run)"),
            (not misses) if complete else (False if misses else None))
    _floor_rows(t, add)
    _populated_rows(results, add)


def _floor_rows(t: dict | None, add) -> None:
    """The turn against its floor (bench.floor) and the phase through PgBouncer."""
    name = (f"the turn <= {TURN_FLOOR_RATIO}x its floor (single-client one round trip + reply "
            "vs its statements on raw psycopg + its turns.pipeline calls, same memories)")
    floor = (t or {}).get("floor")
    if floor and "turn_p50_ms" in floor:
        ratio = floor["turn_p50_ms"] / floor["p50_ms"] if floor["p50_ms"] else float("inf")
        add(name, f"p50 {floor['turn_p50_ms']:.1f} ms vs floor {floor['p50_ms']:.1f} ms (SQL "
            f"{floor['sql_p50_ms']:.1f} + pure {floor['pure_p50_ms']:.1f}; "
            f"{floor['statements_p50']:.0f} statements) = {ratio:.2f}x at "
            f"{int(floor['records']):,} memories, {floor['rounds']} alternating rounds "
            f"({_errors_text(floor)})",
            verdict(ratio <= TURN_FLOOR_RATIO, floor))
    else:
        add(name, "not run", None)
    name = "through PgBouncer (transaction pooling): one round trip from 8 clients, zero errors"
    pooled = (t or {}).get("pgbouncer")
    if pooled and "errors" in pooled:
        direct = _turn_sizes(t).get(int(t.get("main_size", 0)), {}).get("one_trip")
        add(name, f"{pooled['per_second']:.1f} turns/s, p50 {pooled['p50_ms']:.0f} ms"
            + (f" (direct: {direct['per_second']:.1f} turns/s)" if direct else "")
            + f"; single client p50 {pooled['single_client']['p50_ms']:.1f} ms; "
            f"{pooled['units'] + pooled['single_client']['units']:,} turns, "
            f"{_errors_text(pooled)}; PgBouncer served "
            f"{pooled.get('served', {}).get('transactions', 0):,} transactions",
            verdict(pooled["units"] > 0 and pooled.get("served", {}).get("transactions", 0) > 0,
                    pooled))
    elif pooled:
        add(name, f"skipped: {pooled.get('skipped', 'not run')}", None)
    else:
        add(name, "not run", None)


def _populated_rows(results: dict, add) -> None:
    pops = [db["populated"] for db in results.get("databases", []) if db.get("populated")]
    spec_name = "populated database: single-client turn p50 within 20% of the empty database's"
    scan_name = ("populated database: no sequential scan of a user table in the turn's "
                 "statements (EXPLAIN ANALYZE)")
    if not pops:
        add(spec_name, "not run (python -m bench --populated)", None)
        add(scan_name, "not run", None)
        return
    pop = pops[0]
    counts = pop.get("counts", {})
    empty, full = pop["single"]["empty"], pop["single"]["populated"]
    add(spec_name,
        f"{full['p50_ms']:.1f} vs {empty['p50_ms']:.1f} ms = ×{pop['ratio']:.2f} "
        f"({counts.get('auth_user', 0):,} users, {counts.get('memory_memoryrecord', 0):,} "
        f"memories; {full['rounds']} alternating rounds; {_errors_text(empty, full)})",
        verdict(pop["ratio"] <= POPULATED_TOLERANCE, empty, full))
    explain = pop["explain"]
    add(scan_name, f"{len(explain['statements'])} statements; sequential scans of user tables: "
        + (", ".join(explain["seq_scans"]) or "none"), not explain["seq_scans"])


def _relevance_rows(results: dict, add) -> None:
    """I6: the quality check and the plan endpoint's cost under relevance (added with `add`)."""
    quality = results.get("relevance_quality")
    name = "relevance quality: >= 8 of ~10 admitted memories about the message's topic (300 memories, 30 topics)"
    if quality:
        seeds = quality["over_seeds"]
        add(name,
            f"{quality['topics_meeting_target']}/{quality['topics']} topics (min {quality['relevance_min']}, "
            f"mean {quality['relevance_mean']:.1f} of {quality['admitted_mean']:.1f} admitted; certainty "
            f"mean {quality['certainty_mean']:.1f}); over {seeds['seeds']} generated users "
            f"{seeds['topics_meeting_target']}/{seeds['topics']} (min {seeds['relevance_min']})",
            quality["topics_meeting_target"] == quality["topics"])
    else:
        add(name, "not run", None)
    name = "plan endpoint p50 under relevance within 10% of certainty at 1,000 memories"
    measured, verdicts = [], []
    for db in results.get("databases", []):
        cost = db.get("relevance")
        if not cost:
            continue
        for label in ("wide", "tight"):
            row = cost[label]
            measured.append(f"{db['db']} {label}: {row['relevance_p50_ms']:.1f} vs "
                            f"{row['certainty_p50_ms']:.1f} ms (×{row['ratio']:.2f}; CPU "
                            f"×{row.get('cpu_ratio', float('nan')):.2f})")
            verdicts.append(row["ratio"] <= RELEVANCE_COST_TOLERANCE)
        at_size = cost["memories"] == RELEVANCE_MEMORIES
    if measured:
        add(name, "; ".join(measured), all(verdicts) if at_size else None)
    else:
        add(name, "not run", None)


def _msgs(case: dict) -> str:
    return f", {case['messages']:,} messages" if case.get("messages") else ""


def _memory_rows(results: dict) -> list[tuple[str, str, bool | None]]:
    """Memory flat: (1) a resolve's peak grows no faster than the candidate rows it must read
    (10× the candidates may cost at most 10× the memory); (2) a plan never loads the history:
    its peak stays within 2× the floor's, which reads ids and sizes of the history and the
    text of the chosen messages only."""
    resolve_parts, resolve_ok = [], []
    plan_parts, plan_ok = [], []
    for db in results.get("databases", []):
        cases = db.get("cases", [])
        resolves = {c["records"]: c for c in cases if c["endpoint"] == "resolve"}
        if 1000 in resolves and 10_000 in resolves:
            low, high = resolves[1000], resolves[10_000]
            growth = high["peak_kib"] / low["peak_kib"]
            allowed = high["candidates"] / max(1, low["candidates"])
            resolve_ok.append(growth <= allowed)
            resolve_parts.append(
                f"{db['db']} {low['peak_kib']:,.0f} → {high['peak_kib']:,.0f} KiB (×{growth:.1f}) for "
                f"{low['candidates']:,} → {high['candidates']:,} candidates (×{allowed:.1f})")
        for c in cases:
            if c["endpoint"] == "plan" and c.get("messages") == 10_000 and c["records"] >= 1000:
                ratio = c["peak_kib"] / c["floor_peak_kib"]
                plan_ok.append(ratio <= 2.0)
                text = db.get("message_text_kib", {}).get(f"{c['records']}/{c['messages']}", 0.0)
                plan_parts.append(
                    f"{db['db']} {c['records']:,} records: {c['peak_kib']:,.0f} KiB vs floor "
                    f"{c['floor_peak_kib']:,.0f} (×{ratio:.1f}; history text {text:,.0f} KiB)")
    rows = []
    if resolve_parts:
        rows.append(("memory flat, resolve: peak grows no faster than the candidates read",
                     "; ".join(resolve_parts), all(resolve_ok)))
    if plan_parts:
        rows.append(("memory flat, plan with 10k messages: peak <= 2x the floor's",
                     "; ".join(plan_parts), all(plan_ok)))
    return rows


# ---------------------------------------------------------------------------------------------
# Tables

# RESULTS.md from this heading on is written by hand (measurements made outside one run) and
# is kept when a run rewrites the file.
KEPT_FROM = "## Resolver refactor: before and after"


def kept_sections(existing: str) -> str:
    """The hand-written part of an existing RESULTS.md (from `KEPT_FROM` on), after a blank
    line; empty when there is none."""
    at = existing.find("\n" + KEPT_FROM)
    if at < 0:
        return ""
    return "\n" + existing[at + 1:]


def _table(headers: list[str], rows: list[list], markdown: bool) -> str:
    cells = [[_fmt(v) for v in row] for row in rows]
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        out += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(out)
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                      enumerate(zip(row, widths, strict=True))) for row in cells]
    return "\n".join(out)


def _render_populated(pop: dict, h, markdown: bool) -> list[str]:
    out = []
    spec, build, counts = pop["spec"], pop.get("build", {}), pop.get("counts", {})
    out.append(h(f"Populated database ({pop['database']}): {spec['users']:,} users × "
                 f"{spec['memories']:,} memories"))
    out.append(("\n" if markdown else "")
               + f"Rows: {', '.join(f'{t} {n:,}' for t, n in counts.items())}. "
               + (f"Reused (built {build.get('built_at', '?')[:16]} in {build['seconds']:.0f} s)."
                  if pop.get("reused") else f"Built in this run in {build['seconds']:.0f} s.")
               + " The single-client one round trip + reply for the same generated user "
               f"({pop.get('memories', 1_000):,} memories, 100 messages) loaded fresh into each "
               "database (the empty one is the run's own `companion_bench`, which holds only the "
               "run's generated users), served by one gunicorn per database, in alternating "
               "rounds:")
    rows = [[name, r["rounds"], r["units"], r["p50_ms"], r["p50_min_ms"], r["p50_max_ms"],
             r["p99_ms"], r["errors"]] for name, r in pop["single"].items()]
    out.append(("\n" if markdown else "") + _table(["database", "rounds", "turns",
                       "p50 ms (median of rounds)",
                       "lowest round p50", "highest round p50", "worst p99 ms", "errors"],
                      rows, markdown))
    explain = pop["explain"]
    out.append(("\n" if markdown else "")
               + f"populated ÷ empty p50 = ×{pop['ratio']:.2f}. EXPLAIN (ANALYZE, BUFFERS) of "
               f"each of the {len(explain['statements'])} statements of the measured user's "
               "first two turns in a fresh process (the first reads what the per-process "
               f"caches then keep; the second: create with plan, {explain['facts']} fact, and "
               "reply), each run in a savepoint rolled back before the statement itself: "
               "sequential scans of user tables: "
               + (", ".join(explain["seq_scans"]) or "none") + ".")
    if markdown:
        for i, st in enumerate(explain["statements"], 1):
            scans = ", ".join(st["seq_scans"]) or "none"
            out.append(f"\n{i}. {st['step']}: `{st['sql']}` (sequential scans of user tables: "
                       f"{scans})\n\n```\n{st['plan']}\n```")
    return out


def _floor_table_rows(t: dict) -> list[list]:
    rows = []
    floor = t.get("floor")
    if floor and "turn_p50_ms" in floor:
        rows.append([f"floor: the turn's statements on raw psycopg + its turns.pipeline calls, "
                     f"{int(floor['records']):,} memories (SQL p50 {floor['sql_p50_ms']:.1f} ms, "
                     f"pure p50 {floor['pure_p50_ms']:.1f} ms)", floor["turns"], "turns",
                     floor["p50_ms"], floor["p95_ms"], None, 0])
        rows.append([f"the single-client turn in the same {floor['rounds']} rounds (median of "
                     f"the rounds' p50s, {floor['turn_p50_min_ms']:.1f}–"
                     f"{floor['turn_p50_max_ms']:.1f})", floor["turn_units"], "turns",
                     floor["turn_p50_ms"], None, None, floor["errors"]])
    pooled = t.get("pgbouncer") or {}
    if "errors" in pooled:
        one, single = dict(pooled), pooled["single_client"]
        one["errors"] -= single["errors"]
        for label, d in ((f"one round trip through PgBouncer ({pooled['pooler']}), "
                          f"{t['clients']} clients", one),
                         ("one round trip through PgBouncer, single client thread", single)):
            rows.append([label, d["per_second"], "turns/s", d["p50_ms"], d["p95_ms"],
                         d["p99_ms"], d["errors"]])
    return rows


def render(results: dict, *, markdown: bool) -> str:
    h = (lambda s: f"\n## {s}\n") if markdown else (lambda s: f"\n== {s} ==")
    meta = results["meta"]
    out = []
    if markdown:
        out.append("# Benchmark results\n")
        out.append(f"Produced by `{meta['command']}` on {meta['started']} "
                   f"({meta['machine']}). Load average at start/end: "
                   f"{meta['load_start']} / {meta['load_end']}; interpreter yardstick "
                   f"{_fmt(meta.get('calibration_mops'))} M loop iterations/s. "
                   f"Total {meta['seconds']:.0f} s.\n")
        out.append(meta["how"] + "\n")
    else:
        out.append(f"{meta['command']} — {meta['started']} — {meta['machine']}")
        out.append(f"load average start/end {meta['load_start']} / {meta['load_end']}; "
                   f"yardstick {_fmt(meta.get('calibration_mops'))} M loop it/s")

    pure = results.get("pure")
    if pure:
        out.append(h("Pure resolver (memory.resolver.resolve, no Django)"))
        rows = [[r["n"], r["best_ms"], r["records_per_s"], r["best_cpu_ms"],
                 r.get("gc_cpu", {}).get("enabled"), r.get("gc_cpu", {}).get("frozen"),
                 r.get("gc_cpu", {}).get("control"), r["active"], r["excluded"]]
                for r in pure["sizes"]]
        out.append(_table(["N records", "best ms (collector paused)", "records/s", "best CPU ms",
                           "CPU ms, collector on", "CPU ms, input frozen",
                           "CPU ms, control loop", "active", "excluded"], rows, markdown))
        extra = []
        if "scaling_100k_10k" in pure:
            extra.append(f"t(100k)/t(10k) = {pure['scaling_100k_10k']:.1f} with the collector "
                         f"paused (CPU {pure['scaling_100k_10k_cpu']:.1f})")
            by = pure.get("scaling_by_regime")
            if by:
                extra.append(f"in CPU time with the collector on {by['enabled']:.1f}, input "
                             f"frozen {by['frozen']:.1f}; the linear control loop "
                             f"{by['control']:.1f} (the caches)")
        slots = pure.get("slots")
        if slots:
            extra.append(f"hot slot {slots['hot']['n']:,} versions {slots['hot']['best_ms']:.1f} ms vs "
                         f"{slots['spread']['n']:,} records over {slots['spread']['n'] // 10:,} slots "
                         f"{slots['spread']['best_ms']:.1f} ms (hot/spread {slots['hot_over_spread']:.2f})")
        out.append(("\n" if markdown else "") + "; ".join(extra))

    for db in results.get("databases", []):
        if db.get("skipped"):
            out.append(h(f"Endpoints on {db['db']}"))
            out.append(f"skipped: {db['skipped']}")
            continue
        if db.get("error"):
            out.append(h(f"Errors on {db['db']}"))
            out.append("ERROR: " + db["error"].strip().splitlines()[-1])
        if db.get("cases"):
            out.append(h(f"Endpoints on {db.get('server_version', db['db'])} "
                         "(in-process django.test.Client, Bearer token; floor = raw cursor + pure core)"))
        rows = [[c["endpoint"], c["records"], c["messages"], c["calls"], c["p50_ms"], c["p95_ms"],
                 c["floor_p50_ms"], c["ratio"], c["queries"], c["floor_queries"], c["peak_kib"],
                 c["floor_peak_kib"], c["match"]] for c in db.get("cases", [])]
        if rows:
            out.append(_table(["endpoint", "records", "messages", "calls", "p50 ms", "p95 ms",
                               "floor p50 ms", "ratio", "queries", "floor q", "peak KiB",
                               "floor peak KiB", "same answer"], rows, markdown))
        t = db.get("turns")
        if t:
            out.append(h(f"Whole turn on {db.get('server_version')}: {t['server']}, "
                         f"{t['clients']} client threads"))
            rows = [
                ["trivial JSON (/bench/ping), before", t["ping_before"]["per_second"], "req/s",
                 t["ping_before"]["p50_ms"], t["ping_before"]["p95_ms"], t["ping_before"].get("p99_ms"), t["ping_before"]["errors"]],
                ["authenticated DRF JSON (/bench/ping-auth)", t["ping_auth"]["per_second"], "req/s",
                 t["ping_auth"]["p50_ms"], t["ping_auth"]["p95_ms"], t["ping_auth"].get("p99_ms"), t["ping_auth"]["errors"]],
                ["whole turn, three requests (create → plan → reply)", t["turns"]["per_second"], "turns/s",
                 t["turns"]["p50_ms"], t["turns"]["p95_ms"], t["turns"].get("p99_ms"), t["turns"]["errors"]],
                *[row for n, size in sorted(_turn_sizes(t).items()) for row in (
                    [f"one round trip (create with plan → reply), {t['clients']} clients, "
                     f"{n:,} memories", size["one_trip"]["per_second"], "turns/s",
                     size["one_trip"]["p50_ms"], size["one_trip"]["p95_ms"],
                     size["one_trip"]["p99_ms"], size["one_trip"]["errors"]],
                    [f"one round trip, single client thread, {n:,} memories",
                     size["single_client"]["per_second"], "turns/s",
                     size["single_client"]["p50_ms"], size["single_client"]["p95_ms"],
                     size["single_client"]["p99_ms"], size["single_client"]["errors"]])],
                *_floor_table_rows(t),
                ["trivial JSON (/bench/ping), after", t["ping_after"]["per_second"], "req/s",
                 t["ping_after"]["p50_ms"], t["ping_after"]["p95_ms"], t["ping_after"].get("p99_ms"), t["ping_after"]["errors"]],
            ]
            out.append(_table(["what", "rate", "unit", "p50 ms", "p95 ms", "p99 ms", "errors"], rows, markdown))
            out.append(("\n" if markdown else "")
                       + f"turns/s ÷ trivial req/s = {t['turns_per_ping'] * 100:.1f}%; "
                       f"÷ authenticated req/s = {t['turns']['per_second'] / t['ping_auth']['per_second'] * 100:.1f}% "
                       f"({t['turns']['units']} turns, {t['records_per_user']:,} records per user"
                       + (f"; SQL queries per turn: create {t['queries']['create']}, plan "
                          f"{t['queries']['plan']}, reply {t['queries']['reply']} (an authenticated "
                          f"request alone: {t['queries']['ping_auth']})" if t.get("queries") else "")
                       + ")")
            q = t.get("queries") or {}
            if "one_total" in q:
                rows = [
                    ["create", q["create"]], ["plan (GET)", q["plan"]], ["reply", q["reply"]],
                    ["whole turn, three requests", q["total"]],
                    [f"create with plan ({q['create_plan_facts']} fact extracted)", q["create_plan"]],
                    *([[f"create with plan, a correction ({q['create_plan_correction_facts']} "
                        "fact extracted)", q["create_plan_correction"]]]
                      if "create_plan_correction" in q else []),
                    [f"create with plan ({q['create_plan_no_fact_facts']} facts extracted)",
                     q["create_plan_no_fact"]],
                    ["reply after a create with plan", q["reply_one"]],
                    ["whole turn, one round trip", q["one_total"]],
                    ["authenticated ping", q["ping_auth"]],
                ]
                out.append(("\n" if markdown else "") + "SQL queries per step (CaptureQueriesContext, "
                           "in-process, autocommit" + (", warm process: one turn with a plan and "
                           "its reply ran first" if q.get("warm") else "") + "; each plan asks "
                           "about one capability, so it logs one decision):")
                out.append(_table(["step", "queries"], rows, markdown))
            steps = (t.get("floor") or {}).get("steps")
            if steps:
                out.append(("\n" if markdown else "") + "The floor's statements, p50 ms each (in "
                           f"how many of its {t['floor']['turns']} turns): " + "; ".join(
                               f"{'`' if markdown else ''}{name[:48]}{'`' if markdown else ''} "
                               f"{v['p50_ms']:.1f} ({v['runs']})" for name, v in steps.items()))
            samples = [f"{name}: {x}" for name, phase in _phases(t).items()
                       for x in phase.get("error_samples", [])[:2]]
            if samples:
                out.append(("\n" if markdown else "") + "error samples: " + " | ".join(samples))
        if db.get("populated"):
            out.extend(_render_populated(db["populated"], h, markdown))

    quality = results.get("relevance_quality")
    costs = [(db["db"], db["relevance"]) for db in results.get("databases", []) if db.get("relevance")]
    if quality or costs:
        out.append(h("Relevance order (I6)"))
    if quality:
        out.append(("\n" if markdown else "")
                   + f"Quality ({quality['memories']} memories over {quality['topics']} topics, budget "
                   f"{quality['budget']} × memory share {quality['memory_share']}: about "
                   f"{quality['admitted_mean']:.1f} memories admitted): memories about the message's "
                   f"topic, per topic, under relevance / certainty:")
        rows = [[r["topic"], r["relevance"], r["relevance_admitted"], r["certainty"], r["certainty_admitted"]]
                for r in quality["rows"]]
        out.append(_table(["topic", "relevance: about it", "admitted", "certainty: about it", "admitted"],
                          rows, markdown))
    if costs:
        rows = []
        for vendor, cost in costs:
            for label in ("wide", "tight"):
                r = cost[label]
                rows.append([vendor, cost["memories"], label, r["budget"], r["calls"], r["relevance_p50_ms"],
                             r["certainty_p50_ms"], r["ratio"], r.get("relevance_cpu_p50_ms"),
                             r.get("certainty_cpu_p50_ms"), r.get("cpu_ratio"),
                             r["relevance_queries"], r["certainty_queries"],
                             f"{r['about_topic']['relevance']}/{r['admitted']['relevance']}",
                             f"{r['about_topic']['certainty']}/{r['admitted']['certainty']}"])
        out.append(("\n" if markdown else "")
                   + "Plan endpoint, calls alternating between the two orders (wide: every memory fits; "
                   "tight: the quality check's budget):")
        out.append(_table(["db", "memories", "budget", "tokens", "calls", "relevance p50 ms",
                           "certainty p50 ms", "ratio", "rel. CPU p50 ms", "cert. CPU p50 ms",
                           "CPU ratio", "queries rel.", "queries cert.",
                           "about topic rel.", "about topic cert."], rows, markdown))

    out.append(h("Targets (compared, never asserted)"))
    rows = [[r["target"], r["measured"], r["result"]] for r in results["targets"]]
    out.append(_table(["target", "measured", "result"], rows, markdown))
    return "\n".join(out) + "\n"


def _forget_rows(results: dict, add) -> None:
    """F6: a forget for a user with 10,000 messages answers in <= 300 ms p50 on PostgreSQL."""
    name = "forget with 10,000 messages <= 300 ms p50 (PostgreSQL, F6)"
    for db in results.get("databases", []):
        forget = db.get("forget")
        if db["db"] != "postgres" or not forget:
            continue
        measured = (f"p50 {forget['p50_ms']:.1f} ms at {forget['messages']:,} messages "
                    f"({forget['withheld']} withheld, {forget['statements']} statements)")
        add(name, measured, forget["p50_ms"] <= forget["target_ms"] if forget["messages"] >= 10_000 else None)
        return
    add(name, "not run", None)


def _feed_rows(results: dict, add) -> None:
    """V2: GET /events answers in <= 20 ms p50 with 1,000,000 events stored, on PostgreSQL
    (the slowest of the reader's cases: tail, start, middle, by user, by type)."""
    name = "GET /events with 1,000,000 events stored <= 20 ms p50 (PostgreSQL, V2)"
    for db in results.get("databases", []):
        feed = db.get("feed")
        if db["db"] != "postgres" or not feed:
            continue
        cases = ", ".join(f"{k} {v['p50_ms']:.1f}" for k, v in feed["cases"].items())
        measured = f"slowest p50 {feed['p50_ms']:.1f} ms ({feed['worst']}) at {feed['events']:,} events; {cases} ms"
        add(name, measured, feed["p50_ms"] <= feed["target_ms"] if feed["events"] >= 1_000_000 else None)
        return
    add(name, "not run", None)
