"""One database's part of a run, in its own process (Django is set up once per process, for
one DATABASE_URL): create the database, migrate, load the worlds, measure the endpoints and
their floor, and on PostgreSQL the whole turn against gunicorn; then drop the database."""

from __future__ import annotations

import json
import sys
import time
import traceback


def log(message: str) -> None:
    print(message, flush=True)


def main(vendor: str, config: dict, out_path: str) -> int:
    from .db import BenchBusy, BenchDatabase, migrate

    result: dict = {"db": vendor, "config": config}
    db = BenchDatabase(vendor)
    try:
        db.create(wait=config.get("lock_wait", 600.0))
    except BenchBusy as exc:
        log(f"  {vendor}: skipped ({exc})")
        result["skipped"] = str(exc)
        with open(out_path, "w") as fh:
            json.dump(result, fh, default=str)
        return 0
    db.configure()
    try:
        import django

        django.setup()
        from django.db import connection

        from config.models import ApiToken

        from . import data, endpoints, load

        result["migrate_s"] = migrate()
        result["server_version"] = _server_version(connection)
        log(f"  {vendor}: migrated in {result['migrate_s']:.1f}s ({result['server_version']})")

        started = time.perf_counter()
        loaded = {}
        seed = config["seed"]
        for n in config["records"]:
            for m in config["messages"]:
                world = data.build_world(
                    n,
                    seed=seed,
                    user=f"bench-{n}-{m}",
                    n_messages=m,
                    id_seed=seed * 100_003 + n * 7 + m,
                )
                loaded[(n, m)] = load.load_world(world)
        if vendor == "postgres":
            load.analyze()
        result["load_s"] = time.perf_counter() - started
        log(f"  {vendor}: generated and loaded {len(loaded)} users in {result['load_s']:.1f}s")

        from .checks import selectors_match_orm

        _, token = ApiToken.issue("bench")
        if loaded:
            result["selectors_match_orm"] = selectors_match_orm(next(iter(loaded.values())))
            log(
                f"  {vendor}: hot-path readers give the ORM's values: "
                f"{result['selectors_match_orm']['all']}"
            )
            cfg = endpoints.CaseConfig(**config["case"])
            result["cases"] = endpoints.run_cases(
                vendor, loaded, token, cfg, config["records"], config["messages"], log
            )
            result["message_text_kib"] = endpoints.message_text_kib(loaded)

        _side_phases(vendor, db, token, config, result)
        if vendor == "postgres" and config.get("turn_seconds", 0) > 0:
            _turn_phases(db, token, config, result)
        if vendor == "postgres" and (config.get("explain") or config.get("profile_turns")):
            _explain_phases(token, config, result)
    except Exception:  # noqa: BLE001 - reported in the results, the run goes on
        result["error"] = traceback.format_exc()
        log(result["error"])
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001
            pass
        db.drop()
    with open(out_path, "w") as fh:
        json.dump(result, fh, default=str)
    return 0 if "error" not in result else 1


def _side_phases(vendor: str, db, token: str, config: dict, result: dict) -> None:
    """The phases each on a user of its own: relevance, forget, feed and, on PostgreSQL, MCP."""
    from . import endpoints, load

    if config.get("relevance_memories"):
        from . import relevance

        started = time.perf_counter()
        user = relevance.load_user(config["relevance_memories"])
        if vendor == "postgres":
            load.analyze()
        log(
            f"  {vendor}: loaded the relevance user ({user['memories']:,} memories) in "
            f"{time.perf_counter() - started:.1f}s"
        )
        result["relevance"] = relevance.endpoint_cost(
            token, user, endpoints.CaseConfig(**config["case"]), log
        )

    if config.get("forget_messages"):
        from . import forget

        result["forget"] = forget.run(config["forget_messages"], config["forget_rounds"], log)

    if config.get("feed_events"):
        from . import feed

        result["feed"] = feed.run(config["feed_events"], config["feed_calls"], token, log)

    if vendor == "postgres" and config.get("mcp_records"):
        result["mcp"] = _mcp(db.url, token, config, log)


def _turn_phases(db, token: str, config: dict, result: dict) -> None:
    """On PostgreSQL: the whole turn against gunicorn, its floor, PgBouncer, the populated
    database."""
    from django.db import connection

    from . import data, load, turns

    vendor = "postgres"
    seed = config["seed"]
    started = time.perf_counter()
    main = config["turn_main"]

    def user(n: int, name: str, world: int, ids: int, messages: int = 100):
        """A user with `n` memories: the generated world number `world`, ids of its own."""
        generated = data.build_world(
            n,
            seed=seed + 1 + world,
            user=f"bench-{name}-{n}",
            n_messages=messages,
            id_seed=seed * 7 + n * 1_009 + ids,
        )
        return load.load_world(generated, with_turn=False)

    groups = {
        n: [user(n, f"turn-{i}", i, i) for i in range(config["turn_clients"])]
        for n in config["turn_sizes"]
    }
    # Conversations no other phase touches (bench.single), of users with the first 8-client
    # user's memories: a fresh one of 100 messages per size, and a long one at the main size.
    singles = {n: user(n, "single", 0, 500).conversation for n in config["turn_sizes"]}
    long = user(main, "long", 0, 900, config["long_messages"]).conversation
    load.analyze()
    log(
        f"  {vendor}: loaded {sum(map(len, groups.values()))} turn users "
        f"({', '.join(f'{len(g)} × {n:,}' for n, g in groups.items())} memories), one more per "
        f"size for the single client and one with a {config['long_messages']:,}-message "
        f"conversation in {time.perf_counter() - started:.1f}s"
    )
    queries = turns.inprocess_queries(groups[main][-1].conversation, token)
    log(f"  {vendor}: queries per turn {queries}")
    connection.close()
    floor_result = None
    if config.get("floor_rounds"):
        from . import floor

        floor_result = floor.run(
            groups[main][-1].conversation,
            token,
            rounds=config["floor_rounds"],
            turns_per_round=config["floor_turns_per_round"],
            seconds_per_round=config["floor_seconds_per_round"],
            database_url=db.url,
            workers=config["turn_workers"],
            texts=turns.TURN_TEXTS,
            plan=turns.PLAN,
            reply=turns.REPLY,
            log=log,
        )
        floor_result["records"] = main
        connection.close()
    conversations = {n: [u.conversation for u in g] for n, g in groups.items()}
    result["turns"] = turns.run(
        db.url,
        conversations,
        token,
        clients=config["turn_clients"],
        workers=config["turn_workers"],
        seconds=config["turn_seconds"],
        log=log,
        main_size=main,
        singles=singles,
        long=long,
        single_turns=config["single_turns"],
        single_rounds=config["single_rounds"],
    )
    result["turns"]["records_per_user"] = main
    result["turns"]["long_messages"] = config["long_messages"]
    result["turns"]["queries"] = queries
    if floor_result is not None:
        result["turns"]["floor"] = floor_result
    if config.get("pgbouncer"):
        result["turns"]["pgbouncer"] = turns.through_pgbouncer(
            db.url,
            conversations[main],
            token,
            clients=config["turn_clients"],
            workers=config["turn_workers"],
            seconds=config["turn_seconds"],
            log=log,
        )
    if config.get("populated"):
        from . import populated

        result["populated"] = populated.run(db.url, token, config, log)


def _explain_phases(token: str, config: dict, result: dict) -> None:
    """On PostgreSQL: the turn's statements under EXPLAIN and the turn under cProfile, at each
    memory size × conversation length (bench.explain)."""
    from pathlib import Path

    from . import explain

    started = time.perf_counter()
    cases = explain.load_cases(
        config["explain_records"], [100, config["long_messages"]], config["seed"]
    )
    log(f"  postgres: loaded {len(cases)} users to explain in {time.perf_counter() - started:.1f}s")
    result["explain"] = explain.run(
        token,
        cases,
        explain=config.get("explain", False),
        profile_turns=config.get("profile_turns", 0),
        out_dir=Path(config["profiles_dir"]),
        log=log,
    )


def _mcp(database_url: str, token: str, config: dict, log) -> dict:
    """`recall` through `/mcp` beside the resolve endpoint (bench.mcp), for a user of its own
    with a read connection made the way the page and `create_connection` make one."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.services import connection_create

    from . import data, load, mcp

    n = config["mcp_records"]
    seed = config["seed"]
    world = data.build_world(
        n, seed=seed + 97, user=f"bench-mcp-{n}", n_messages=100, id_seed=seed * 13 + n
    )
    loaded = load.load_world(world, with_turn=False)
    load.analyze()
    user = get_user_model().objects.get(pk=loaded.user_pk)
    made = connection_create(user=user, name="Bench assistant", access="read")
    connection.close()
    target = {
        "user": loaded.user,
        "character": loaded.character,
        "conversation": loaded.conversation,
        "records": loaded.records,
        "token": made.token,
    }
    return mcp.run(
        database_url,
        target,
        token,
        config={
            "workers": config["turn_workers"],
            "clients": config["turn_clients"],
            "seconds": config["mcp_seconds"],
            "case": config["case"],
        },
        log=log,
    )


def _server_version(connection) -> str:
    if connection.vendor == "sqlite":
        import sqlite3

        return f"SQLite {sqlite3.sqlite_version}"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        return f"PostgreSQL {cursor.fetchone()[0]}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]))
