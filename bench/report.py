"""The tables: plain text for the terminal, Markdown for bench/RESULTS.md (the targets' rows
come from `bench.targets`)."""

from __future__ import annotations

import math

from .report_turns import render_explain, render_turns


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
    return "\n" + existing[at + 1 :]


def _table(headers: list[str], rows: list[list], markdown: bool) -> str:
    cells = [[_fmt(v) for v in row] for row in rows]
    if markdown:
        out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        out += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(out)
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += [
        "  ".join(
            c.rjust(w) if i else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in cells
    ]
    return "\n".join(out)


def _render_populated(pop: dict, h, markdown: bool) -> list[str]:
    out = []
    spec, build, counts = pop["spec"], pop.get("build", {}), pop.get("counts", {})
    out.append(
        h(
            f"Populated database ({pop['database']}): {spec['users']:,} users × "
            f"{spec['memories']:,} memories"
        )
    )
    out.append(
        ("\n" if markdown else "")
        + f"Rows: {', '.join(f'{t} {n:,}' for t, n in counts.items())}. "
        + (
            f"Reused (built {build.get('built_at', '?')[:16]} in {build['seconds']:.0f} s)."
            if pop.get("reused")
            else f"Built in this run in {build['seconds']:.0f} s."
        )
        + " The single-client one round trip + reply for the same generated user "
        f"({pop.get('memories', 1_000):,} memories, 100 messages) loaded fresh into each "
        "database (the empty one is the run's own `companion_bench`, which holds only the "
        "run's generated users), served by one gunicorn per database, in alternating "
        "rounds:"
    )
    rows = [
        [
            name,
            r["rounds"],
            r["units"],
            r["p50_ms"],
            r["p50_min_ms"],
            r["p50_max_ms"],
            r["p99_ms"],
            r["errors"],
        ]
        for name, r in pop["single"].items()
    ]
    out.append(
        ("\n" if markdown else "")
        + _table(
            [
                "database",
                "rounds",
                "turns",
                "p50 ms (median of rounds)",
                "lowest round p50",
                "highest round p50",
                "worst p99 ms",
                "errors",
            ],
            rows,
            markdown,
        )
    )
    explain = pop["explain"]
    out.append(
        ("\n" if markdown else "")
        + f"populated ÷ empty p50 = ×{pop['ratio']:.2f}. EXPLAIN (ANALYZE, BUFFERS) of "
        f"each of the {len(explain['statements'])} statements of the measured user's "
        "first two turns in a fresh process (the first reads what the per-process "
        f"caches then keep; the second: create with plan, {explain['facts']} fact, and "
        "reply), each run in a savepoint rolled back before the statement itself: "
        "sequential scans of user tables: " + (", ".join(explain["seq_scans"]) or "none") + "."
    )
    if markdown:
        for i, st in enumerate(explain["statements"], 1):
            scans = ", ".join(st["seq_scans"]) or "none"
            out.append(
                f"\n{i}. {st['step']}: `{st['sql']}` (sequential scans of user tables: "
                f"{scans})\n\n```\n{st['plan']}\n```"
            )
    return out


def _render_meta(meta: dict, markdown: bool) -> list[str]:
    """The run's command, time, machine and load (and in Markdown how it measures)."""
    out = []
    if markdown:
        out.append("# Benchmark results\n")
        out.append(
            f"Produced by `{meta['command']}` on {meta['started']} "
            f"({meta['machine']}). Load average at start/end: "
            f"{meta['load_start']} / {meta['load_end']}; interpreter yardstick "
            f"{_fmt(meta.get('calibration_mops'))} M loop iterations/s. "
            f"Total {meta['seconds']:.0f} s.\n"
        )
        out.append(meta["how"] + "\n")
    else:
        out.append(f"{meta['command']} — {meta['started']} — {meta['machine']}")
        out.append(
            f"load average start/end {meta['load_start']} / {meta['load_end']}; "
            f"yardstick {_fmt(meta.get('calibration_mops'))} M loop it/s"
        )
    return out


def _render_pure(pure: dict, h, markdown: bool) -> list[str]:
    """The pure resolver by size, beside the plain resolver, and its scaling and slots."""
    out = []
    out.append(h("Pure resolver (memory.resolver.resolve, no Django)"))
    rows = [
        [
            r["n"],
            r["best_ms"],
            r["records_per_s"],
            r["best_cpu_ms"],
            r.get("gc_cpu", {}).get("enabled"),
            r.get("gc_cpu", {}).get("frozen"),
            r.get("gc_cpu", {}).get("control"),
            r["active"],
            r["excluded"],
        ]
        for r in pure["sizes"]
    ]
    out.append(
        _table(
            [
                "N records",
                "best ms (collector paused)",
                "records/s",
                "best CPU ms",
                "CPU ms, collector on",
                "CPU ms, input frozen",
                "CPU ms, control loop",
                "active",
                "excluded",
            ],
            rows,
            markdown,
        )
    )
    plain = [r for r in pure["sizes"] if r.get("plain")]
    if plain:
        out.append(
            ("\n" if markdown else "")
            + "Beside the plain resolver (bench.pure.plain_resolve: the same rules, same "
            "answer checked), collector paused as in a request, median of alternating calls:"
            + ("\n" if markdown else "")
        )
        out.append(
            _table(
                ["N records", "resolver ms", "plain resolver ms", "ratio", "ratio in CPU"],
                [
                    [r["n"]]
                    + [f"{r['plain'][k]:.2f}" for k in ("resolver_ms", "plain_ms")]
                    + [f"{r['plain'][k]:.2f}x" for k in ("ratio", "ratio_cpu")]
                    for r in plain
                ],
                markdown,
            )
        )
    extra = []
    if "scaling_100k_10k" in pure:
        extra.append(
            f"t(100k)/t(10k) = {pure['scaling_100k_10k']:.1f} with the collector "
            f"paused (CPU {pure['scaling_100k_10k_cpu']:.1f})"
        )
        by = pure.get("scaling_by_regime")
        if by:
            extra.append(
                f"in CPU time with the collector on {by['enabled']:.1f}, input "
                f"frozen {by['frozen']:.1f}; the linear control loop "
                f"{by['control']:.1f} (the caches)"
            )
    slots = pure.get("slots")
    if slots:
        extra.append(
            f"hot slot {slots['hot']['n']:,} versions {slots['hot']['best_ms']:.1f} ms vs "
            f"{slots['spread']['n']:,} records over {slots['spread']['n'] // 10:,} slots "
            f"{slots['spread']['best_ms']:.1f} ms (hot/spread {slots['hot_over_spread']:.2f})"
        )
    out.append(("\n" if markdown else "") + "; ".join(extra))
    return out


def _render_database(db: dict, turns: dict | None, h, markdown: bool) -> list[str]:
    """One database's endpoints beside their floor, its turns and its populated run (or why
    it was skipped, or its error)."""
    out = []
    if db.get("skipped"):
        out.append(h(f"Endpoints on {db['db']}"))
        out.append(f"skipped: {db['skipped']}")
        return out
    if db.get("error"):
        out.append(h(f"Errors on {db['db']}"))
        out.append("ERROR: " + db["error"].strip().splitlines()[-1])
    if db.get("cases"):
        out.append(
            h(
                f"Endpoints on {db.get('server_version', db['db'])} "
                "(in-process django.test.Client, Bearer token; floor = raw cursor + pure core)"
            )
        )
    rows = [
        [
            c["endpoint"],
            c["records"],
            c["messages"],
            c["calls"],
            c["p50_ms"],
            c["p95_ms"],
            c["floor_p50_ms"],
            c["ratio"],
            c["queries"],
            c["floor_queries"],
            c["peak_kib"],
            c["floor_peak_kib"],
            c["match"],
        ]
        for c in db.get("cases", [])
    ]
    if rows:
        out.append(
            _table(
                [
                    "endpoint",
                    "records",
                    "messages",
                    "calls",
                    "p50 ms",
                    "p95 ms",
                    "floor p50 ms",
                    "ratio",
                    "queries",
                    "floor q",
                    "peak KiB",
                    "floor peak KiB",
                    "same answer",
                ],
                rows,
                markdown,
            )
        )
    t = db.get("turns") or (turns if (turns or {}).get("db") == db["db"] else None)
    if t:
        out.extend(render_turns(t, db.get("server_version"), h, markdown))
    if db.get("populated"):
        out.extend(_render_populated(db["populated"], h, markdown))
    return out


def _render_quality(quality: dict, markdown: bool) -> list[str]:
    """I6: memories about the message's topic admitted under relevance and under certainty."""
    out = []
    out.append(
        ("\n" if markdown else "")
        + f"Quality ({quality['memories']} memories over {quality['topics']} topics, budget "
        f"{quality['budget']} × memory share {quality['memory_share']}: about "
        f"{quality['admitted_mean']:.1f} memories admitted): memories about the message's "
        f"topic, per topic, under relevance / certainty:"
    )
    rows = [
        [
            r["topic"],
            r["relevance"],
            r["relevance_admitted"],
            r["certainty"],
            r["certainty_admitted"],
        ]
        for r in quality["rows"]
    ]
    out.append(
        _table(
            ["topic", "relevance: about it", "admitted", "certainty: about it", "admitted"],
            rows,
            markdown,
        )
    )
    return out


def _render_costs(costs: list[tuple[str, dict]], markdown: bool) -> list[str]:
    """I6: the plan endpoint's cost under each order, by database and budget."""
    out = []
    rows = []
    for vendor, cost in costs:
        for label in ("wide", "tight"):
            r = cost[label]
            rows.append(
                [
                    vendor,
                    cost["memories"],
                    label,
                    r["budget"],
                    r["calls"],
                    r["relevance_p50_ms"],
                    r["certainty_p50_ms"],
                    r["ratio"],
                    r.get("relevance_cpu_p50_ms"),
                    r.get("certainty_cpu_p50_ms"),
                    r.get("cpu_ratio"),
                    r["relevance_queries"],
                    r["certainty_queries"],
                    f"{r['about_topic']['relevance']}/{r['admitted']['relevance']}",
                    f"{r['about_topic']['certainty']}/{r['admitted']['certainty']}",
                ]
            )
    out.append(
        ("\n" if markdown else "")
        + "Plan endpoint, calls alternating between the two orders (wide: every memory fits; "
        "tight: the quality check's budget):"
    )
    out.append(
        _table(
            [
                "db",
                "memories",
                "budget",
                "tokens",
                "calls",
                "relevance p50 ms",
                "certainty p50 ms",
                "ratio",
                "rel. CPU p50 ms",
                "cert. CPU p50 ms",
                "CPU ratio",
                "queries rel.",
                "queries cert.",
                "about topic rel.",
                "about topic cert.",
            ],
            rows,
            markdown,
        )
    )
    return out


def render(results: dict, *, markdown: bool) -> str:
    h = (lambda s: f"\n## {s}\n") if markdown else (lambda s: f"\n== {s} ==")
    out = _render_meta(results["meta"], markdown)
    pure = results.get("pure")
    if pure:
        out.extend(_render_pure(pure, h, markdown))
    turns = results.get("turns")
    for db in results.get("databases", []):
        out.extend(_render_database(db, turns, h, markdown))
    if results.get("explain"):
        out.extend(render_explain(results["explain"], h, markdown))
    quality = results.get("relevance_quality")
    costs = [
        (db["db"], db["relevance"]) for db in results.get("databases", []) if db.get("relevance")
    ]
    if quality or costs:
        out.append(h("Relevance order (I6)"))
    if quality:
        out.extend(_render_quality(quality, markdown))
    if costs:
        out.extend(_render_costs(costs, markdown))
    out.append(h("Targets (compared, never asserted)"))
    rows = [[r["target"], r["measured"], r["result"]] for r in results["targets"]]
    out.append(_table(["target", "measured", "result"], rows, markdown))
    return "\n".join(out) + "\n"
