"""The targets that hold the turn to SPEC I9 — a plan, and the work to build it, follow what
it holds, never what is stored — compared, never asserted (`bench.targets` adds them):

- the single-client turn on a conversation of 5,000 messages within 1.2× the same turn on a
  fresh one of 100 (`turns.long_conversation.single_client.p50_ms` against
  `turns.sizes[N].single_client.p50_ms`, the same memories, alternating rounds);
- the plan answer at 10,000 memories within 1.2× its size at 1,000 (`turns.sizes[N]
  .plan_bytes`: the JSON body of the create-with-plan answer);
- no node of a held turn's statements reads every message of the conversation or every record
  of the context (`explain.explain[].everything`, `bench.explain`)."""

from __future__ import annotations

LONG_TOLERANCE = 1.2
PLAN_BYTES_TOLERANCE = 1.2
PLAN_BYTES_SIZES = (1_000, 10_000)


def turn_results(results: dict) -> dict | None:
    """The whole-turn figures: at the top of the JSON (`turns`), or in a database's entry as
    runs before the lift wrote them."""
    if results.get("turns"):
        return results["turns"]
    return next((db["turns"] for db in results.get("databases", []) if db.get("turns")), None)


def long_name(messages: int = 5_000) -> str:
    return (
        f"the {messages:,}-message conversation <= {LONG_TOLERANCE}x the 100-message one "
        "(single-client one round trip + reply, same memories, alternating rounds, I9)"
    )


def rows(results: dict, add, verdict, errors_text) -> None:
    """Add the I9 targets' rows (`add(name, measured, ok)`)."""
    t = turn_results(results) or {}
    _long_row(t, add, verdict, errors_text)
    _plan_bytes_row(t, add, verdict, errors_text)
    _explain_row(results.get("explain"), add)


def _long_row(t: dict, add, verdict, errors_text) -> None:
    long = t.get("long_conversation")
    if not long:
        add(long_name(), "not run", None)
        return
    name = long_name(int(t.get("long_messages", 5_000)))
    short = (t.get("sizes") or {}).get(str(long["records"]), {}).get("single_client")
    if not short:
        add(name, f"not run at {long['records']:,} memories on 100 messages", None)
        return
    at = long["single_client"]
    ratio = at["p50_ms"] / short["p50_ms"] if short["p50_ms"] else float("inf")
    add(
        name,
        f"p50 {at['p50_ms']:.1f} ms ({at['messages_start']:,}→{at['messages_end']:,} messages) "
        f"vs {short['p50_ms']:.1f} ms ({short['messages_start']:,}→"
        f"{short['messages_end']:,}) = {ratio:.2f}x at {long['records']:,} memories, "
        f"{at['units']:,} and {short['units']:,} turns in {at.get('rounds', 1)} rounds each; "
        f"plan answer {_bytes(long.get('plan_bytes'))} vs "
        f"{_bytes(t['sizes'][str(long['records'])].get('plan_bytes'))} "
        f"({errors_text(at, short)})",
        verdict(ratio <= LONG_TOLERANCE, at, short),
    )


def _bytes(n) -> str:
    return "–" if n is None else f"{n:,.0f} bytes"


def _plan_bytes_row(t: dict, add, verdict, errors_text) -> None:
    low, high = PLAN_BYTES_SIZES
    name = (
        f"plan bytes at {high:,} memories <= {PLAN_BYTES_TOLERANCE}x those at {low:,} (the JSON "
        "body of the create-with-plan answer, single client, I9)"
    )
    sizes = t.get("sizes") or {}
    at = {n: sizes.get(str(n), {}) for n in PLAN_BYTES_SIZES}
    if any(at[n].get("plan_bytes") is None for n in PLAN_BYTES_SIZES):
        add(name, f"not run at {low:,} and {high:,} memories", None)
        return
    ratio = at[high]["plan_bytes"] / at[low]["plan_bytes"]
    phases = [at[n]["single_client"] for n in PLAN_BYTES_SIZES]
    add(
        name,
        f"{_bytes(at[high]['plan_bytes'])} vs {_bytes(at[low]['plan_bytes'])} = {ratio:.2f}x "
        f"(median of each phase's answers; {errors_text(*phases)})",
        verdict(ratio <= PLAN_BYTES_TOLERANCE, *phases),
    )


def _explain_row(explain: dict | None, add) -> None:
    name = (
        "EXPLAIN: no node of a held turn's statements reads every message of the conversation "
        "or every record of the context (I9)"
    )
    cases = (explain or {}).get("explain") or []
    if not cases:
        add(name, "not run (python -m bench --only explain)", None)
        return
    found = [
        f"{c['records']:,} memories/{c['messages']:,} messages: {x}"
        for c in cases
        for x in c["everything"]
    ]
    add(
        name,
        f"{len(cases)} cases ("
        + ", ".join(f"{c['records']:,}/{c['messages']:,}" for c in cases)
        + f"), {sum(c['statements'] for c in cases)} statements; "
        + (f"{len(found)} read everything: " + "; ".join(found) if found else "none reads all"),
        not found,
    )
