"""The whole turn's tables (`bench.report` renders the rest): its load phases with the server's
CPU per request, the single-client turn on fresh and long conversations, the plan answer's size,
the SQL per step, the floor and PgBouncer, and the EXPLAIN check's summary."""

from __future__ import annotations

from .targets import load_phases, turns_by_size


def _floor_table_rows(t: dict) -> list[list]:
    rows = []
    floor = t.get("floor")
    if floor and "turn_p50_ms" in floor:
        rows.append(
            [
                f"floor: the turn's statements on raw psycopg + its turns.pipeline calls, "
                f"{int(floor['records']):,} memories (SQL p50 {floor['sql_p50_ms']:.1f} ms, "
                f"pure p50 {floor['pure_p50_ms']:.1f} ms)",
                floor["turns"],
                "turns",
                floor["p50_ms"],
                floor["p95_ms"],
                None,
                None,
                None,
                0,
            ]
        )
        rows.append(
            [
                f"the single-client turn in the same {floor['rounds']} rounds (median of "
                f"the rounds' p50s, {floor['turn_p50_min_ms']:.1f}–"
                f"{floor['turn_p50_max_ms']:.1f})",
                floor["turn_units"],
                "turns",
                floor["turn_p50_ms"],
                None,
                None,
                None,
                None,
                floor["errors"],
            ]
        )
    pooled = t.get("pgbouncer") or {}
    if "errors" in pooled:
        one, single = dict(pooled), pooled["single_client"]
        one["errors"] -= single["errors"]
        for label, d in (
            (f"one round trip through PgBouncer ({pooled['pooler']}), {t['clients']} clients", one),
            ("one round trip through PgBouncer, single client thread", single),
        ):
            rows.append(_row(label, d, "turns/s") + [d["errors"]])
    return rows


def _cpu(d: dict) -> tuple:
    cpu = d.get("cpu_ms_per_request") or {}
    return cpu.get("app"), cpu.get("db")


def _row(label: str, d: dict, unit: str) -> list:
    cpu = [None if x is None else f"{x:.2f}" for x in _cpu(d)]
    return [label, d["per_second"], unit, d["p50_ms"], d["p95_ms"], d.get("p99_ms"), *cpu]


def _phase_rows(t: dict) -> list[list]:
    """The load phases and the single-client turns, each with its errors last."""
    rows = [
        _row("trivial JSON (/bench/ping), before", t["ping_before"], "req/s")
        + [t["ping_before"]["errors"]],
        _row("authenticated DRF JSON (/bench/ping-auth)", t["ping_auth"], "req/s")
        + [t["ping_auth"]["errors"]],
        _row("whole turn, three requests (create → plan → reply)", t["turns"], "turns/s")
        + [t["turns"]["errors"]],
    ]
    long = t.get("long_conversation") or {}
    for n, size in sorted(turns_by_size(t).items()):
        one, single = size["one_trip"], size["single_client"]
        rows.append(
            _row(
                f"one round trip (create with plan → reply), {t['clients']} clients, "
                f"{n:,} memories",
                one,
                "turns/s",
            )
            + [one["errors"]]
        )
        rows.append(
            _row(
                f"one round trip, single client thread, {n:,} memories{_grew(single)}",
                single,
                "turns/s",
            )
            + [single["errors"]]
        )
        if long.get("records") == n:
            at = long["single_client"]
            rows.append(
                _row(
                    f"the same on a {t.get('long_messages', 5_000):,}-message conversation"
                    f"{_grew(at)}",
                    at,
                    "turns/s",
                )
                + [at["errors"]]
            )
    return rows


def _grew(d: dict) -> str:
    if "messages_start" not in d:
        return ""
    return f" ({d['messages_start']:,}→{d['messages_end']:,} messages)"


def _cpu_text(t: dict) -> str:
    """The server's CPU per turn against that per authenticated ping (same clients, server)."""
    from .cpu import cpu_total

    main = turns_by_size(t).get(int(t.get("main_size", 0)), {}).get("one_trip") or {}
    turn, ping = cpu_total(main), cpu_total(t["ping_auth"])
    if turn is None or not ping:
        return "Server CPU per request: not measured (the database is not on this machine)."
    app, db = _cpu(main)
    return (
        f"Server CPU (utime + stime of the gunicorn workers and of the benchmark database's "
        f"PostgreSQL backends over each phase, per completed request): a one-round-trip turn "
        f"at {int(t['main_size']):,} memories from {t['clients']} clients (two requests) "
        f"{2 * turn:.2f} ms (app {2 * app:.2f} + database {2 * db:.2f}) = "
        f"{2 * turn / ping:.1f}x an authenticated ping's {ping:.2f} ms; its turns/s = "
        f"{main['per_second'] / t['ping_auth']['per_second'] * 100:.1f}% of the "
        "authenticated ping's req/s."
    )


def _plan_bytes_text(t: dict) -> str:
    sizes = sorted(turns_by_size(t).items())
    parts = [f"{n:,} memories {s['plan_bytes']:,.0f}" for n, s in sizes if s.get("plan_bytes")]
    long = t.get("long_conversation") or {}
    if long.get("plan_bytes"):
        parts.append(
            f"{long['records']:,} memories on the {t.get('long_messages', 5_000):,}-message "
            f"conversation {long['plan_bytes']:,.0f}"
        )
    if not parts:
        return ""
    return (
        "Plan answer (the JSON body of create with plan, median of the single-client turns), "
        "bytes: " + "; ".join(parts) + "."
    )


def _queries_rows(q: dict) -> list[list]:
    rows = [
        ["create", q["create"]],
        ["plan (GET)", q["plan"]],
        ["reply", q["reply"]],
        ["whole turn, three requests", q["total"]],
        [f"create with plan ({q['create_plan_facts']} fact extracted)", q["create_plan"]],
    ]
    if "create_plan_correction" in q:
        rows.append(
            [
                f"create with plan, a correction ({q['create_plan_correction_facts']} fact "
                "extracted)",
                q["create_plan_correction"],
            ]
        )
    return rows + [
        [
            f"create with plan ({q['create_plan_no_fact_facts']} facts extracted)",
            q["create_plan_no_fact"],
        ],
        ["reply after a create with plan", q["reply_one"]],
        ["whole turn, one round trip", q["one_total"]],
        ["authenticated ping", q["ping_auth"]],
    ]


def render_turns(t: dict, version: str | None, h, markdown: bool) -> list[str]:
    from .report import _table

    gap = "\n" if markdown else ""
    out = [h(f"Whole turn on {version}: {t['server']}, {t['clients']} client threads")]
    rows = [
        *_phase_rows(t),
        *_floor_table_rows(t),
        _row("trivial JSON (/bench/ping), after", t["ping_after"], "req/s")
        + [t["ping_after"]["errors"]],
    ]
    headers = ["what", "rate", "unit", "p50 ms", "p95 ms", "p99 ms"]
    headers += ["app CPU ms/req", "db CPU ms/req", "errors"]
    out.append(_table(headers, rows, markdown))
    queries = t.get("queries")
    out.append(
        gap + f"turns/s ÷ trivial req/s = {t['turns_per_ping'] * 100:.1f}%; "
        "÷ authenticated req/s = "
        f"{t['turns']['per_second'] / t['ping_auth']['per_second'] * 100:.1f}% "
        f"({t['turns']['units']} turns, {t['records_per_user']:,} records per user"
        + (
            f"; SQL queries per turn: create {queries['create']}, plan "
            f"{queries['plan']}, reply {queries['reply']} (an authenticated "
            f"request alone: {queries['ping_auth']})"
            if queries
            else ""
        )
        + ")"
    )
    out.append(gap + _cpu_text(t))
    if plan_bytes := _plan_bytes_text(t):
        out.append(gap + plan_bytes)
    q = queries or {}
    if "one_total" in q:
        out.append(
            gap
            + "SQL queries per step (CaptureQueriesContext, in-process, autocommit"
            + (
                ", warm process: one turn with a plan and its reply ran first"
                if q.get("warm")
                else ""
            )
            + "; each plan asks about one capability, so it logs one decision):"
        )
        out.append(_table(["step", "queries"], _queries_rows(q), markdown))
    steps = (t.get("floor") or {}).get("steps")
    if steps:
        tick = "`" if markdown else ""
        out.append(
            gap + "The floor's statements, p50 ms each (in "
            f"how many of its {t['floor']['turns']} turns): "
            + "; ".join(
                f"{tick}{name[:48]}{tick} {v['p50_ms']:.1f} ({v['runs']})"
                for name, v in steps.items()
            )
        )
    samples = [
        f"{name}: {x}"
        for name, phase in load_phases(t).items()
        for x in phase.get("error_samples", [])[:2]
    ]
    if samples:
        out.append(gap + "error samples: " + " | ".join(samples))
    return out


def render_explain(explain: dict, h, markdown: bool) -> list[str]:
    """The EXPLAIN check's summary and the files of the turn's plans and profiles."""
    from .report import _table

    gap = "\n" if markdown else ""
    out = [
        h(f"The turn's statements under EXPLAIN and its profile ({explain.get('server_version')})")
    ]
    cases = explain.get("explain") or []
    if cases:
        rows = [
            [
                c["records"],
                c["messages"],
                c["context_records"],
                c["statements"],
                c["most_read"].get("conversations_message", 0),
                c["most_read"].get("memory_memoryrecord", 0),
                len(c["everything"]),
                c["file"],
            ]
            for c in cases
        ]
        out.append(
            _table(
                [
                    "memories",
                    "messages",
                    "context records",
                    "statements (held turn)",
                    "most message rows a node reads",
                    "most record rows a node reads",
                    "statements reading everything",
                    "file",
                ],
                rows,
                markdown,
            )
        )
        found = [f"{c['records']:,}/{c['messages']:,}: {x}" for c in cases for x in c["everything"]]
        if found:
            out.append(gap + "Reading everything: " + " | ".join(found))
    for p in explain.get("profile") or []:
        out.append(
            gap + f"Profile, {p['records']:,} memories, {p['messages']:,} messages: "
            f"{p['cpu_ms_per_turn_profiled']:.1f} ms of CPU a turn under cProfile ({p['turns']} "
            f"turns) in {p['file']}"
        )
    return out
