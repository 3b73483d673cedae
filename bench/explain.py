"""The turn's statements under `EXPLAIN (ANALYZE, BUFFERS)` and the turn under cProfile, at each
memory size × conversation length (`python -m bench --only explain,profile`, PostgreSQL):
text files in bench/profiles/ (`postgres-turn-explain-1000r-100m.txt`,
`postgres-turn-cpu-1000r-100m.txt`; a smoke run writes them under bench/results/profiles/).

Each case is a user of its own (R memories, a main conversation of M messages, bulk-inserted
like every benchmark user, `bench.load`), served in this process through the in-process test
client (the whole Django request path, no socket). On its conversation:

1. the first turn in this process (create with `plan`, then the reply): it reads what the
   process then holds (the context's memory state, the conversation's history), so its plans
   are written but not judged;
2. the next turn, the judged one (one fact learnt, one logged decision): a turn whose state is
   held. Every statement of both runs first under EXPLAIN (ANALYZE, BUFFERS) in a savepoint (a
   transaction of its own in autocommit) that is rolled back, then itself
   (`bench.populated.Explainer`): a write is applied once, by the turn, and each EXPLAIN sees
   the state its statement sees. Literals in the plans are redacted (S1);
3. with `profile_turns`, that many more one-round-trip turns under cProfile timed by the
   process's CPU time (`bench.profile`), by own and by cumulative time.

The check (SPEC I9: a turn whose state is held reads nothing per turn that grows with the
conversation or the stored records): no node of the judged turn's plans reads as many rows of
`conversations_message` as the conversation had messages when loaded, nor as many of
`memory_memoryrecord` as the context (the user's, the character's and the conversation's
scopes) had records. A node's rows read: the rows it returned plus those its filters and
rechecks removed, times its loops.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

MESSAGES = "conversations_message"
RECORDS = "memory_memoryrecord"
_NODE = re.compile(r"(?:^|->\s+)(?P<node>[A-Z][^(]*?)\s+\(cost=")
_ON = re.compile(r" on (\w+)(?: \w+)?$")
_ACTUAL = re.compile(r"\(actual (?:time=\S+ )?rows=(?P<rows>[\d.]+) loops=(?P<loops>\d+)\)")
_REMOVED = re.compile(r"^\s*Rows Removed by (?:Filter|Join Filter|Index Recheck): (\d+)")


@dataclass
class Node:
    node: str
    relation: str | None
    rows: float
    loops: int
    removed: float = 0.0

    @property
    def reads(self) -> int:
        """Rows the node went through, over all its loops (EXPLAIN gives both per loop)."""
        return round((self.rows + self.removed) * self.loops)


def nodes(plan: str, indexes: dict[str, str] | None = None) -> list[Node]:
    """The executed nodes of a text-format plan with ANALYZE (never-executed ones left out).
    A node on an index (`Bitmap Index Scan on <index>`) is counted as reading the index's
    table when `indexes` (index name → table) names it."""
    indexes = indexes or {}
    found: list[Node] = []
    current: Node | None = None
    for line in plan.splitlines():
        if (m := _NODE.search(line)) is not None:
            current = None
            actual = _ACTUAL.search(line)
            if actual is None:
                continue
            on = _ON.search(m.group("node"))
            relation = on.group(1) if on else None
            current = Node(
                node=m.group("node"),
                relation=indexes.get(relation, relation),
                rows=float(actual.group("rows")),
                loops=int(actual.group("loops")),
            )
            found.append(current)
        elif current is not None and (r := _REMOVED.match(line)) is not None:
            current.removed += float(r.group(1))
    return found


def reads_everything(
    plan: str, limits: dict[str, int], indexes: dict[str, str] | None = None
) -> list[str]:
    """'table rows' for each node that reads at least `limits[table]` rows of its table."""
    return [
        f"{n.relation} {n.reads:,}"
        for n in nodes(plan, indexes)
        if n.relation in limits and n.reads >= limits[n.relation] > 0
    ]


def most_read(plan: str, indexes: dict[str, str] | None = None) -> dict[str, int]:
    """The most rows a node of the plan reads, by table (CTEs and functions too)."""
    out: dict[str, int] = {}
    for n in nodes(plan, indexes):
        if n.relation:
            out[n.relation] = max(out.get(n.relation, 0), n.reads)
    return out


@dataclass
class Case:
    records: int
    messages: int
    conversation: str
    context_records: int


def load_cases(records: list[int], messages: list[int], seed: int) -> list[Case]:
    """One user per (records, messages), each with a main conversation of `messages`."""
    from conversations.scopes import scope_ids_of

    from . import data, load

    cases = []
    for r in records:
        for m in messages:
            world = data.build_world(
                r,
                seed=seed + 5,
                user=f"bench-explain-{r}-{m}",
                n_messages=m,
                id_seed=seed * 11 + r * 13 + m,
            )
            loaded = load.load_world(world, with_turn=False)
            scopes = set(scope_ids_of(world.user, world.main.character, world.main.id, None))
            context = sum(1 for x in world.records if x.scope_id in scopes)
            cases.append(Case(r, m, loaded.conversation, context))
    load.analyze()
    return cases


class _Turns:
    """One-round-trip turns (create with plan → reply) on one conversation, in process."""

    def __init__(self, token: str, conversation: str, profiler=None):
        from django.test import Client

        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        self.conversation = conversation
        self.profiler = profiler  # on during each request only, not while reading its answer
        self.cpu_s = 0.0  # the CPU time of the requests while profiled

    def turn(self, key: str, text: str, explainer=None) -> int:
        """One turn; its number of facts learnt."""
        from .turns import PLAN, REPLY

        if explainer is not None:
            explainer.step = "create with plan"
        created = self._post(
            f"/api/v1/conversations/{self.conversation}/turns",
            {"turn_key": key, "content": text, "plan": PLAN},
        )
        if explainer is not None:
            explainer.step = "reply"
        self._post(f"/api/v1/turns/{created['id']}/reply", {"content": REPLY})
        return len(created["extracted"])

    def _post(self, path: str, body: dict) -> dict:
        payload = json.dumps(body)
        if self.profiler is not None:
            started = time.process_time()
            self.profiler.start()
        response = self.client.post(path, payload, content_type="application/json")
        if self.profiler is not None:
            self.profiler.stop()
            self.cpu_s += time.process_time() - started
        if response.status_code not in (200, 201):
            raise RuntimeError(f"explain: {path} answered {response.status_code}")
        return response.json()


def explain_case(case: Case, token: str) -> dict:
    """The two turns of the case explained; the judged turn's statements checked."""
    from django.db import connection

    from .populated import Explainer
    from .turns import TURN_TEXTS

    turns = _Turns(token, case.conversation)
    limits = {MESSAGES: case.messages, RECORDS: case.context_records}
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, tablename FROM pg_indexes WHERE schemaname = 'public'")
        indexes = dict(cursor.fetchall())
    out: dict = {"records": case.records, "messages": case.messages}
    out["context_records"] = case.context_records
    for label, key, text in (
        ("first", "explain-first", TURN_TEXTS[2]),
        ("held", "explain", TURN_TEXTS[0]),
    ):
        explainer = Explainer()
        with connection.execute_wrapper(explainer):
            facts = turns.turn(key, text, explainer)
        out[label] = {
            "facts": facts,
            "statements": [
                {
                    **st,
                    "reads": most_read(st["plan"], indexes),
                    "everything": reads_everything(st["plan"], limits, indexes),
                }
                for st in explainer.plans
            ],
        }
    out["everything"] = [
        f"statement {i} ({st['step']}, {st['sql'][:60]} …): {_most(st['everything'])}"
        for i, st in enumerate(out["held"]["statements"], 1)
        if st["everything"]
    ]
    return out


def _most(found: list[str]) -> str:
    """'table up to N rows in k nodes' for each table of `reads_everything`'s list."""
    by_table: dict[str, list[int]] = {}
    for item in found:
        table, _, rows = item.partition(" ")
        by_table.setdefault(table, []).append(int(rows.replace(",", "")))
    return ", ".join(
        f"{table} up to {max(rows):,} rows in {len(rows)} node{'s' if len(rows) > 1 else ''}"
        for table, rows in by_table.items()
    )


def render(result: dict, version: str, command: str) -> str:
    """The text file of one case: what was run, the check's findings, every plan."""
    r, m = result["records"], result["messages"]
    out = [
        f"EXPLAIN (ANALYZE, BUFFERS) of the turn's statements: {r:,} memories, a conversation "
        f"of {m:,} messages ({version}; `{command}`).",
        f"The context (user, character, conversation scopes) holds {result['context_records']:,} "
        f"records; the conversation {m:,} messages when loaded. Literals are redacted.",
        "Each statement ran first under EXPLAIN in a savepoint rolled back, then itself.",
        "Check (SPEC I9), on the held turn only: no node reads >= the conversation's messages "
        f"of {MESSAGES} or >= the context's records of {RECORDS} (rows returned + removed by "
        "filters, times loops).",
        "Reads everything: " + ("; ".join(result["everything"]) or "nothing") + ".",
    ]
    for label, title in (
        (
            "first",
            "The first turn on this conversation in this process (fills the held state; "
            "not judged)",
        ),
        ("held", "The next turn, its state held (judged)"),
    ):
        turn = result[label]
        out.append(
            f"\n== {title}: {len(turn['statements'])} statements, {turn['facts']} fact(s) learnt =="
        )
        for i, st in enumerate(turn["statements"], 1):
            reads = ", ".join(f"{t} {n:,}" for t, n in sorted(st["reads"].items()))
            out.append(
                f"\n{i}. {st['step']}: {st['sql']}\n   most rows a node reads: {reads or '-'}"
                + (
                    f"\n   {'READS EVERYTHING' if label == 'held' else 'reads all (not judged)'}: "
                    + ", ".join(st["everything"])
                    if st["everything"]
                    else ""
                )
                + f"\n\n{st['plan']}"
            )
    return "\n".join(out) + "\n"


def profile_case(case: Case, token: str, turns: int) -> tuple[str, dict]:
    """`turns` one-round-trip turns under cProfile timed by CPU time: the text and figures."""
    from .profile import _cprofiler
    from .turns import TURN_TEXTS

    _Turns(token, case.conversation).turn("profile-warm", TURN_TEXTS[1])  # the state held
    profiler = _cprofiler(40, cpu=True)()
    driver = _Turns(token, case.conversation, profiler)
    for n in range(turns):
        driver.turn(f"profile-{n}", TURN_TEXTS[n % len(TURN_TEXTS)])
    cpu_ms = driver.cpu_s * 1000 / max(1, turns)
    head = (
        f"cProfile (timed by CPU time) of {turns} one-round-trip turns (create with plan + "
        f"reply) at {case.records:,} memories, a conversation of {case.messages:,} messages: "
        "the in-process Django test client's requests through the whole request path, "
        f"profiled while each request runs (not while the harness reads its answer); "
        f"{cpu_ms:.1f} ms of CPU a turn under the profiler.\n\n"
    )
    return head + profiler.output_text(), {"turns": turns, "cpu_ms_per_turn_profiled": cpu_ms}


def run(
    token: str, cases: list[Case], *, explain: bool, profile_turns: int, out_dir: Path, log
) -> dict:
    """Explain and/or profile every case; the files written and, with `explain`, the check."""
    from django.db import connection

    from .worker import _server_version

    out_dir.mkdir(parents=True, exist_ok=True)
    version = _server_version(connection)
    result: dict = {"directory": str(out_dir), "explain": [], "profile": []}
    for case in cases:
        tag = f"{case.records}r-{case.messages}m"
        if explain:
            found = explain_case(case, token)
            path = out_dir / f"postgres-turn-explain-{tag}.txt"
            path.write_text(render(found, version, "python -m bench --only explain"))
            result["explain"].append({**_summary(found), "file": path.name})
            log(
                f"  explain {case.records:>6} memories, {case.messages:>5} messages: "
                f"{len(found['held']['statements'])} statements of the held turn; reads "
                f"everything: {len(found['everything'])} -> {path.name}"
            )
        if profile_turns:
            text, figures = profile_case(case, token, profile_turns)
            path = out_dir / f"postgres-turn-cpu-{tag}.txt"
            path.write_text(text)
            result["profile"].append(
                {"records": case.records, "messages": case.messages, **figures, "file": path.name}
            )
            log(
                f"  profile {case.records:>6} memories, {case.messages:>5} messages: "
                f"{figures['cpu_ms_per_turn_profiled']:.1f} ms CPU a turn -> {path.name}"
            )
    connection.close()
    return result


def _summary(found: dict) -> dict:
    held = found["held"]["statements"]
    return {
        "records": found["records"],
        "messages": found["messages"],
        "context_records": found["context_records"],
        "statements": len(held),
        "first_statements": len(found["first"]["statements"]),
        "facts": found["held"]["facts"],
        "everything": found["everything"],
        "most_read": {
            table: max((st["reads"].get(table, 0) for st in held), default=0)
            for table in (MESSAGES, RECORDS)
        },
    }
