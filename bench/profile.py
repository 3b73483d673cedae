"""Profile the resolve and plan endpoints (and their floor) and save text summaries in
bench/profiles/: with cProfile (the standard library; the default) the functions by their own
time and by cumulative time, or with pyinstrument (`--pyinstrument`) its call tree.

    .venv/bin/python -m bench.profile --db postgres --records 100 --messages 100 --only resolve,plan
    .venv/bin/pip install pyinstrument      # a profiling aid only: not in requirements.lock
    .venv/bin/python -m bench.profile --pyinstrument --db sqlite --records 10000 --messages 10000

Uses the benchmark's own database (temporary SQLite file or `companion_bench`), dropped at
the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from urllib.parse import urlencode

PROFILES = Path(__file__).resolve().parent / "profiles"


def _cprofiler(top: int, cpu: bool = False):
    """A cProfile-backed stand-in for pyinstrument's `Profiler` (start, stop, output_text);
    with `cpu`, timed by the process's CPU time (waits for the database or for a core left
    out)."""
    import cProfile
    import io
    import pstats
    import time

    class CProfiler:
        def __init__(self, interval: float = 0.0):
            self.profile = cProfile.Profile(time.process_time) if cpu else cProfile.Profile()

        def start(self):
            self.profile.enable()

        def stop(self):
            self.profile.disable()

        def dump(self, path) -> None:
            self.profile.dump_stats(path)

        def output_text(self, **_):
            out = io.StringIO()
            stats = pstats.Stats(self.profile, stream=out)
            stats.strip_dirs()
            out.write("== by own time (tottime) ==\n")
            stats.sort_stats("tottime").print_stats(top)
            out.write("== by cumulative time ==\n")
            stats.sort_stats("cumulative").print_stats(top)
            return out.getvalue()

    return CProfiler


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    Profiler = _profiler(args)
    if Profiler is None:
        return 2
    PROFILES.mkdir(exist_ok=True)
    suffix = f"-{args.tag}" if args.tag else ""
    if args.pure:
        _profile_pure(args, Profiler, suffix)
    else:
        _profile_endpoints(args, Profiler, suffix)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--pure", action="store_true", help="profile the pure resolver only")
    parser.add_argument("--tag", default="", help="suffix for the profile file names")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated: turn, turn-one, ping, resolve, plan, floor-resolve, floor-plan",
    )
    parser.add_argument(
        "--pyinstrument", action="store_true", help="pyinstrument's call tree instead of cProfile"
    )
    parser.add_argument("--top", type=int, default=40, help="cProfile: rows per listing")
    parser.add_argument(
        "--stats",
        action="store_true",
        help="cProfile: also save the raw statistics (.pstats) beside the text",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="cProfile timed by CPU time (leaves out waits for the database)",
    )
    return parser


def _profiler(args):
    """pyinstrument's `Profiler` (None, and said so, when it is not installed), or the
    cProfile stand-in."""
    if not args.pyinstrument:
        return _cprofiler(args.top, cpu=args.cpu)
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("pyinstrument is not installed: .venv/bin/pip install pyinstrument", file=sys.stderr)
        return None
    return Profiler


def _profile_pure(args, Profiler, suffix: str) -> None:
    """The pure resolver alone, `args.calls` calls over one world."""
    from memory.resolver import resolve

    from . import data

    world = data.build_world(args.records)
    context = world.context()
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for _ in range(args.calls):
        resolve(
            world.records,
            world.tombstones,
            context,
            many_keys=world.many_keys,
            secret=world.secret,
        )
    profiler.stop()
    path = PROFILES / f"pure-resolve-{args.records}{suffix}.txt"
    path.write_text(profiler.output_text(unicode=True, color=False, show_all=False))
    print(path)


def _profile_endpoints(args, Profiler, suffix: str) -> None:
    """The endpoints (and their floor) over the benchmark's own database, dropped at the end."""
    from .db import BenchDatabase, migrate

    db = BenchDatabase(args.db)
    db.create()  # waits for any benchmark run using companion_bench
    db.configure()
    try:
        import django

        django.setup()
        from django.test import Client

        from config.models import ApiToken

        from . import data, load
        from .data import NOW
        from .endpoints import PLAN_BUDGET, Floor

        migrate()
        world = data.build_world(
            args.records, seed=20261101, user="bench-profile", n_messages=args.messages
        )
        info = load.load_world(world)
        if args.db == "postgres":
            load.analyze()
        _, token = ApiToken.issue("bench")
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        now = NOW.isoformat().replace("+00:00", "Z")
        body = info.resolve_body()
        plan_url = f"/api/v1/turns/{info.turn}/prompt-plan?" + urlencode(
            {"budget": PLAN_BUDGET, "now": now}
        )
        floor = Floor(args.db)
        case = floor.case(info)
        context = world.context()
        from .turns import PLAN, REPLY, TURN_TEXTS

        counter = iter(range(10**9))

        def post(path: str, body: dict) -> dict:
            """A JSON POST as a runtime makes it, stored (201); its answer."""
            answer = client.post(path, json.dumps(body), content_type="application/json")
            assert answer.status_code == 201, answer.content[:200]
            return answer.json()

        def turn_create(tag: str, **extra) -> str:
            n = next(counter)
            text = TURN_TEXTS[n % len(TURN_TEXTS)]
            body = {"turn_key": f"{tag}{n}", "content": text, **extra}
            return post(f"/api/v1/conversations/{info.conversation}/turns", body)["id"]

        def whole_turn():
            turn = turn_create("p")
            plan = client.get(
                f"/api/v1/turns/{turn}/prompt-plan?budget=8000&capabilities=tone.playful"
            )
            assert plan.status_code == 200, plan.content[:200]
            post(f"/api/v1/turns/{turn}/reply", {"content": REPLY})

        def one_trip():
            """The one round trip: create with a plan, then the reply (what a user waits for)."""
            post(f"/api/v1/turns/{turn_create('q', plan=PLAN)}/reply", {"content": REPLY})

        def ping():
            assert client.get("/bench/ping").status_code == 200

        calls = {
            "turn": whole_turn,
            "turn-one": one_trip,
            "ping": ping,
            "resolve": lambda: client.post(
                "/api/v1/memory/resolve", body, content_type="application/json"
            ),
            "plan": lambda: client.get(plan_url),
            "floor-resolve": lambda: floor.resolve_call(case, context),
            "floor-plan": lambda: floor.plan_call(case, context),
        }
        _profile_calls(calls, args, Profiler, suffix)
    finally:
        from django.db import connections

        connections.close_all()
        db.drop()


def _profile_calls(calls: dict, args, Profiler, suffix: str) -> None:
    """Each call asked for (`--only`; all by default): warmed once, then profiled over
    `args.calls` calls, its summary saved."""
    only = {x for x in args.only.split(",") if x}
    for name, fn in calls.items():
        if only and name not in only:
            continue
        fn()  # warm
        profiler = Profiler(interval=0.0005)
        profiler.start()
        for _ in range(args.calls):
            fn()
        profiler.stop()
        path = PROFILES / (f"{args.db}-{name}-{args.records}r-{args.messages}m{suffix}.txt")
        path.write_text(profiler.output_text(unicode=True, color=False, show_all=False))
        if args.stats and hasattr(profiler, "dump"):
            profiler.dump(path.with_suffix(".pstats"))
        print(path)


if __name__ == "__main__":
    sys.exit(main())
