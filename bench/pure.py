"""The pure resolver alone (no Django): records per second at N records, best of several
runs, and one hot slot against the same number of records spread over many slots.

Each size is timed under three garbage-collector regimes, alternating call by call:

- `enabled`: the collector as a bare Python process runs it. Each full collection walks
  every tracked object alive, the input world included, and the resolver's allocations
  trigger them in proportion to N, so this regime grows as N² for large N;
- `paused`: `gc.disable()` for the call, as a request runs the resolver (the selectors'
  `memory.builders.gc_paused`): the regime the endpoints and the turn see;
- `frozen`: the input moved to the permanent generation (`gc.freeze()`) with the collector
  on: collections still run but no longer walk the input.

Beside them, a control loop that touches each record's fields once and stores one dict entry
per record (linear by construction): its time per record grows with N too, as the world
outgrows the processor caches, which is the part of the resolver's superlinearity no code
change in it removes.
"""

from __future__ import annotations

import gc
import time

from memory.resolver import resolve

from . import data


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
    the control loop's."""
    runs = runs or {}
    out: dict = {"sizes": [], "calibration_mops": calibrate(), "passes": passes}
    rows: dict[int, dict] = {}
    for _ in range(passes):
        for n in sizes:
            started = time.perf_counter()
            world = data.build_world(n)
            built = time.perf_counter() - started
            context = world.context()

            def call(world=world, context=context):
                return resolve(
                    world.records,
                    world.tombstones,
                    context,
                    many_keys=world.many_keys,
                    secret=world.secret,
                )

            trace = call().trace
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
                for regime in REGIMES:  # alternated, so load hits each regime alike
                    wall, cpu = _time_regime(call, regime)
                    row["gc"][regime] = min(row["gc"][regime], wall * 1000)
                    row["gc_cpu"][regime] = min(row["gc_cpu"][regime], cpu * 1000)
                    if regime == "paused":
                        row["best_ms"] = min(row["best_ms"], wall * 1000)
                        row["best_cpu_ms"] = min(row["best_cpu_ms"], cpu * 1000)
                wall, cpu = best_of(
                    lambda world=world, now=context.now: control(world.records, now), 1
                )
                row["gc"]["control"] = min(row["gc"]["control"], wall * 1000)
                row["gc_cpu"]["control"] = min(row["gc_cpu"]["control"], cpu * 1000)
            del world, call
    for n in sizes:
        row = rows[n]
        row["records_per_s"] = n / (row["best_ms"] / 1000)
        row["records_per_cpu_s"] = n / (row["best_cpu_ms"] / 1000)
        out["sizes"].append(row)
        g = row["gc_cpu"]
        log(
            f"  pure resolve N={n:<7} best {row['best_ms']:8.2f} ms  "
            f"{row['records_per_s']:>12,.0f} "
            f"records/s  (CPU {row['best_cpu_ms']:.2f} ms; CPU with the collector on "
            f"{g['enabled']:.2f} ms, input frozen {g['frozen']:.2f} ms; control loop "
            f"{g['control']:.2f} ms)"
        )

    by_n = {row["n"]: row for row in out["sizes"]}
    if 10_000 in by_n and 100_000 in by_n:
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
    out["slots"] = slots
    return out
