"""The pure resolver alone (no Django): records per second at N records, best of several
runs, and one hot slot against the same number of records spread over many slots.

Each size is timed under three garbage-collector regimes, alternating call by call:

- `enabled`: the collector as a bare Python process runs it. Each full collection walks
  every tracked object alive, the input world included, and the resolver's allocations
  trigger them in proportion to N, so this regime grows as N² for large N;
- `paused`: `gc.disable()` for the call, as a request runs the resolver (the selectors'
  `config.storage.gc_paused`): the regime the endpoints and the turn see;
- `frozen`: the input moved to the permanent generation (`gc.freeze()`) with the collector
  on: collections still run but no longer walk the input.

Beside them, a control loop that touches each record's fields once and stores one dict entry
per record (linear by construction): its time per record grows with N too, as the world
outgrows the processor caches, which is the part of the resolver's superlinearity no code
change in it removes.

And beside the resolver, the plain resolver (`plain_resolve`): the same rules written the
way a first version would be, one pass over the records and one over the survivors, no caches
and nothing made lazily. Its answer is checked equal to the resolver's before anything is
timed (`check_same_answer`); then both are called alternately with the collector paused (the
request's regime) and compared by the median of their calls: the data grows faster than
linearly with N (more slots, longer chains), so the figure is the resolver's time over the
plain resolver's at each N, not t(100k)/t(10k).
"""

from __future__ import annotations

import gc
import statistics
import time

from memory.domain import normalise_value, r6_beats, value_hash
from memory.resolver import RESOLVER_REASONS, resolve

from . import data

_TRACE_KEYS = {reason: "excluded_" + reason.replace("-", "_") for reason in RESOLVER_REASONS}


def calibrate() -> float:
    """Millions of simple interpreter loop iterations per second right now: a yardstick for
    how busy (or fast) the machine was during the run."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for i in range(200_000):
            total += i
        best = min(best, time.perf_counter() - started)
    return 0.2 / best


def best_of(fn, runs: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) over `runs` calls."""
    wall = cpu = float("inf")
    for _ in range(runs):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        t1, c1 = time.perf_counter(), time.process_time()
        wall, cpu = min(wall, t1 - t0), min(cpu, c1 - c0)
    return wall, cpu


def control(records, now) -> int:
    """A linear pass touching the fields `_decide` reads first and one dict entry per record
    (the resolver's `reasons`): what the memory hierarchy alone costs per record."""
    seen = {}
    k = 0
    for r in records:
        seen[r.id] = r.status
        if r.valid_from > now or r.valid_until is not None:
            k += 1
        k += len(r.key) + len(r.scope.kind)
    return k + len(seen)


def plain_resolve(records, tombstones, context, *, many_keys=frozenset(), secret=b""):
    """SPEC §3's R1–R6 written plainly over the same `memory.domain` records, with the same
    domain helpers (`Context.matches`, `Scope.scope_id`, `Tombstone.blocks`, `r6_beats`,
    `normalise_value`, `value_hash`): one pass over the records decides R1–R4 and notes what
    each survivor names in `supersedes`, one pass over the survivors decides R5 and R6. A
    repeated id is decided once (the first row of it: the rows of a read are distinct).

    Returns (the active records by key then id, the reason of every excluded record by id,
    the count by reason): what `memory.resolver.resolve` answers in `active`, `excluded` and
    its trace."""
    tombstones_of = {}
    for tomb in tombstones:
        tombstones_of.setdefault(tomb.key, []).append(tomb)
    reasons = {}
    survivors, named = _plain_r1_to_r4(records, tombstones_of, context, secret, reasons)
    winners = _plain_r5_r6(survivors, named, context.now, many_keys, reasons)
    active = sorted(winners.values(), key=lambda r: (r.key, r.id))
    for record in active:
        del reasons[record.id]
    counts = {}
    for reason in reasons.values():
        counts[reason] = counts.get(reason, 0) + 1
    return active, reasons, counts


def _plain_r1_to_r4(records, tombstones_of, context, secret, reasons):
    """The first pass: R1 scope, R2 forgotten, R3 not yet valid or expired, R4 blocked by a
    tombstone; notes each record's reason (None while it survives) in `reasons`. Returns the
    survivors with their scope ids, and the ids they name in `supersedes`."""
    now = context.now
    survivors = []
    named = set()
    for record in records:
        if record.id in reasons:
            continue
        reasons[record.id] = None
        if not context.matches(record.scope, record.user):
            reasons[record.id] = "scope"
            continue
        if record.status == "forgotten":
            reasons[record.id] = "forgotten"
            continue
        if record.valid_from > now:
            reasons[record.id] = "not-yet-valid"
            continue
        if (record.valid_until is not None and record.valid_until <= now) or (
            record.status == "expired"
            and (record.status_since is None or record.status_since <= now)
        ):
            reasons[record.id] = "expired"
            continue
        scope_id = record.scope.scope_id(record.user)
        tombs = tombstones_of.get(record.key)
        if tombs and _plain_blocked(record, scope_id, tombs, secret):
            reasons[record.id] = "forgotten"
            continue
        survivors.append((record, scope_id))
        if record.supersedes is not None:
            named.add(record.supersedes)
    return survivors, named


def _plain_blocked(record, scope_id, tombs, secret) -> bool:
    """R4: one of the key's tombstones blocks the record."""
    for tomb in tombs:
        hashed = value_hash(secret, record.value) if tomb.value_hash is not None else None
        if tomb.blocks(
            user=record.user,
            key=record.key,
            scope_id=scope_id,
            evidence_time=record.evidence_time,
            hashed_value=hashed,
        ):
            return True
    return False


def _plain_r5_r6(survivors, named, now, many_keys, reasons):
    """The second pass, over the survivors: R5 superseded (named by a survivor, or stored
    `superseded` by now), then R6 one winner per slot by `r6_beats`; the losers' reasons go
    in `reasons`. Returns the winner of each slot."""
    winners = {}
    for record, scope_id in survivors:
        if record.id in named or (
            record.status == "superseded"
            and (record.status_since is None or record.status_since <= now)
        ):
            reasons[record.id] = "superseded"
            continue
        value = normalise_value(record.value) if record.key in many_keys else ""
        slot = (scope_id, record.key, value)
        best = winners.get(slot)
        if best is None:
            winners[slot] = record
        elif r6_beats(record, best):
            reasons[best.id] = "lower-precedence"
            winners[slot] = record
        else:
            reasons[record.id] = "lower-precedence"
    return winners


def check_same_answer(resolution, plain) -> None:
    """The resolver's answer is the plain resolver's: the same active records in the same
    order, the same reason for every excluded id, the same counts in the trace (raises
    AssertionError, whatever the interpreter's flags, naming what differs)."""
    active, reasons, counts = plain
    if [r.id for r in resolution.active] != [r.id for r in active]:
        raise AssertionError("the resolver and the plain resolver keep different records")
    if {e.id: e.reason for e in resolution.excluded} != reasons:
        raise AssertionError("the resolver and the plain resolver exclude differently")
    traced = {reason: resolution.trace[_TRACE_KEYS[reason]] for reason in RESOLVER_REASONS}
    if {reason: n for reason, n in traced.items() if n} != counts:
        raise AssertionError("the resolver's counts are not the plain resolver's")


def _paired(resolver: list[tuple[float, float]], plain: list[tuple[float, float]]) -> dict:
    """The resolver beside the plain resolver, from (wall, CPU) ms of alternating calls: each
    one's median and best wall time, the ratio of the wall medians (the figure judged), and
    the same ratio in CPU time (what a loaded machine's waiting for a core leaves out)."""
    wall, plain_wall = [w for w, _ in resolver], [w for w, _ in plain]
    cpu = statistics.median(c for _, c in resolver)
    plain_cpu = statistics.median(c for _, c in plain)
    mid, plain_mid = statistics.median(wall), statistics.median(plain_wall)
    return {
        "regime": "paused",
        "calls": len(resolver),
        "resolver_ms": mid,
        "plain_ms": plain_mid,
        "resolver_best_ms": min(wall),
        "plain_best_ms": min(plain_wall),
        "ratio": mid / plain_mid,
        "resolver_cpu_ms": cpu,
        "plain_cpu_ms": plain_cpu,
        "ratio_cpu": cpu / plain_cpu,
    }


REGIMES = ("paused", "enabled", "frozen")


def _time_regime(fn, regime: str) -> tuple[float, float]:
    enabled = gc.isenabled()
    try:
        if regime == "paused":
            gc.disable()
        elif regime == "frozen":
            gc.collect()
            gc.freeze()
            gc.enable()
        else:
            gc.enable()
        return best_of(fn, 1)
    finally:
        if regime == "frozen":
            gc.unfreeze()
        (gc.enable if enabled else gc.disable)()


def run(
    sizes: list[int], slot_n: int, log, runs: dict[int, int] | None = None, passes: int = 2
) -> dict:
    """Each size alone in memory (its world built, measured, dropped), the whole sequence
    `passes` times, keeping the best per size: a burst of load on the shared machine would
    have to hit the same size in every pass to skew a ratio. `best_ms` is the `paused`
    regime (as in a request); `gc` and `gc_cpu` hold each regime's best wall and CPU time and
    the control loop's. `plain` compares the resolver with the plain resolver (each call of
    the resolver with the collector paused is followed by one of the plain resolver, paused
    too): the median of each one's calls and their ratio, after `check_same_answer`."""
    runs = runs or {}
    out: dict = {"sizes": [], "calibration_mops": calibrate(), "passes": passes}
    rows: dict[int, dict] = {}
    paired: dict[int, tuple[list, list]] = {n: ([], []) for n in sizes}  # (wall, CPU) ms
    for _ in range(passes):
        for n in sizes:
            _measure_size(n, rows, paired[n], runs)
    for n in sizes:
        row = rows[n]
        row["records_per_s"] = n / (row["best_ms"] / 1000)
        row["records_per_cpu_s"] = n / (row["best_cpu_ms"] / 1000)
        row["plain"] = _paired(*paired[n])
        out["sizes"].append(row)
        _log_size(row, log)
    _scaling(out, log)
    out["slots"] = _slots(slot_n, log)
    return out


def _measure_size(n: int, rows: dict[int, dict], paired: tuple[list, list], runs: dict) -> None:
    """One pass at size `n`: its world built, the two resolvers' answers checked equal, then
    timed (each regime's best into `rows[n]`, the paired calls into `paired`). The world is
    dropped when this returns, so each size is alone in memory."""
    started = time.perf_counter()
    world = data.build_world(n)
    built = time.perf_counter() - started
    context = world.context()

    def on_world(resolver):
        """`resolver` asked about this world, as the turn asks (the same arguments for both)."""
        return lambda: resolver(
            world.records,
            world.tombstones,
            context,
            many_keys=world.many_keys,
            secret=world.secret,
        )

    call, plain = on_world(resolve), on_world(plain_resolve)

    resolution = call()
    check_same_answer(resolution, plain())
    trace = resolution.trace
    del resolution
    row = rows.get(n)
    if row is None:
        row = rows[n] = {
            "n": n,
            "best_ms": float("inf"),
            "best_cpu_ms": float("inf"),
            "active": trace["active"],
            "excluded": n - trace["active"],
            "build_s": built,
            "world": world.stats(),
            "gc": {name: float("inf") for name in (*REGIMES, "control")},
            "gc_cpu": {name: float("inf") for name in (*REGIMES, "control")},
        }
    for _ in range(runs.get(n, 30 if n <= 1000 else 15 if n <= 10_000 else 5)):
        _time_round(row, paired, call, plain)
        wall, cpu = best_of(lambda: control(world.records, context.now), 1)
        row["gc"]["control"] = min(row["gc"]["control"], wall * 1000)
        row["gc_cpu"]["control"] = min(row["gc_cpu"]["control"], cpu * 1000)


def _time_round(row: dict, paired: tuple[list, list], call, plain) -> None:
    """One call of the resolver in each collector regime, alternated so load hits each regime
    alike; after the `paused` one, one call of the plain resolver, paused too."""
    for regime in REGIMES:
        wall, cpu = _time_regime(call, regime)
        row["gc"][regime] = min(row["gc"][regime], wall * 1000)
        row["gc_cpu"][regime] = min(row["gc_cpu"][regime], cpu * 1000)
        if regime == "paused":
            row["best_ms"] = min(row["best_ms"], wall * 1000)
            row["best_cpu_ms"] = min(row["best_cpu_ms"], cpu * 1000)
            paired[0].append((wall * 1000, cpu * 1000))
            paired[1].append(tuple(t * 1000 for t in _time_regime(plain, "paused")))


def _log_size(row: dict, log) -> None:
    g, p = row["gc_cpu"], row["plain"]
    log(
        f"  pure resolve N={row['n']:<7} best {row['best_ms']:8.2f} ms  "
        f"{row['records_per_s']:>12,.0f} "
        f"records/s  (CPU {row['best_cpu_ms']:.2f} ms; CPU with the collector on "
        f"{g['enabled']:.2f} ms, input frozen {g['frozen']:.2f} ms; control loop "
        f"{g['control']:.2f} ms)"
    )
    log(
        f"  {'':20} median {p['resolver_ms']:8.2f} ms vs the plain resolver "
        f"{p['plain_ms']:.2f} ms = {p['ratio']:.2f}x (CPU {p['ratio_cpu']:.2f}x; collector "
        f"paused as in a request, {p['calls']} alternating calls each, same answer checked)"
    )


def _scaling(out: dict, log) -> None:
    """t(100k)/t(10k) when both sizes ran, overall and by collector regime."""
    by_n = {row["n"]: row for row in out["sizes"]}
    if 10_000 not in by_n or 100_000 not in by_n:
        return
    low, high = by_n[10_000], by_n[100_000]
    out["scaling_100k_10k"] = high["best_ms"] / low["best_ms"]
    out["scaling_100k_10k_cpu"] = high["best_cpu_ms"] / low["best_cpu_ms"]
    # CPU time: it counts the collector's work and leaves out waiting for a core.
    out["scaling_by_regime"] = {
        name: high["gc_cpu"][name] / low["gc_cpu"][name] for name in (*REGIMES, "control")
    }
    log(
        "  CPU t(100k)/t(10k): "
        + ", ".join(f"{name} {value:.1f}" for name, value in out["scaling_by_regime"].items())
    )


def _slots(slot_n: int, log) -> dict:
    """One hot slot against the same number of records spread over many slots."""
    context = data.slots_context()
    inputs = {"hot": data.hot_slot(slot_n), "spread": data.spread_slots(slot_n)}
    best = {name: [float("inf"), float("inf")] for name in inputs}
    for _ in range(21):  # alternated, so a change in machine load hits both alike
        for name, records in inputs.items():
            wall, cpu = best_of(lambda records=records: resolve(records, [], context), 1)
            best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
    slots = {}
    for name, (wall, cpu) in best.items():
        slots[name] = {
            "n": slot_n,
            "best_ms": wall * 1000,
            "best_cpu_ms": cpu * 1000,
            "records_per_s": slot_n / wall,
        }
        log(
            f"  pure resolve {name:6} {slot_n} records: best {wall * 1000:8.2f} ms"
            f"  (cpu {cpu * 1000:.2f} ms)"
        )
    slots["hot_over_spread"] = slots["hot"]["best_ms"] / slots["spread"]["best_ms"]
    return slots
