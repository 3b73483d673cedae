"""Seeded, deterministic synthetic data for the benchmarks.

One *world* is one user's memory: several characters, conversations and scenes, slots whose
records form correction chains (some arriving out of order, some with windows of their own),
stored statuses as a normalisation run would leave them, expired, not-yet-valid and forgotten
records with their tombstones, a realistic spread of authorities and confidences, `many` keys
with several value slots, and source messages for provenance.

The same function feeds the pure benchmark (``World.records`` are ``memory.domain``
records) and the database (``load_world`` bulk-inserts the same records as rows, plus the
messages, the conversations and a turn). Everything comes from ``random.Random(seed)``: the
same arguments give the same world, ids included.

Only ``memory.domain`` (standard library only) is imported at module level, so the pure
benchmark never needs Django.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from conversations.domain import Context
from conversations.scopes import Scope
from memory.domain import AUTHORITY_RANK, MemoryRecord, Tombstone, normalise_value, value_hash

# The instant every world is built around (the benchmarks resolve "now" = NOW).
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
SECRET = bytes(range(7, 39))  # the per-user secret (stored hex in MemoryProfile)

CHARACTERS = (
    ("captain-rowan", "Captain Rowan"),
    ("mira-vale", "Mira Vale"),
    ("old-tom", "Old Tom"),
    ("juniper", "Juniper"),
)
N_CONVERSATIONS = 6
SCENES = ("greenhouse", "rooftop", "downstairs")
SOURCE_MESSAGES_PER_CONVERSATION = 40

# The registry as migration memory/0002 seeds it.
REGISTRY_KEYS = {
    "user.preferred_name": "one",
    "user.avoid_nickname": "many",
    "user.likes": "many",
    "user.dislikes": "many",
    "user.lives_in": "one",
    "user.works_at": "one",
    "basil_plant.name": "one",
    "dog.name": "one",
    "cat.name": "one",
}
MANY_KEYS = frozenset(k for k, c in REGISTRY_KEYS.items() if c == "many")

AUTHORITY_WEIGHTS = (
    ("model-inferred", 30),
    ("rule-extracted", 45),
    ("user-confirmed", 15),
    ("user-corrected", 10),
)
SCOPE_WEIGHTS = (("user", 40), ("character", 25), ("conversation", 20), ("scene", 15))
CONFIDENCES = (1.0, 1.0, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.45, 0.3)
WORDS = (
    "tea jazz rain basil harbor marlowe lantern letter rooftop greenhouse sailing chess "
    "poetry coffee bread maps stars winter oranges violin hiking sushi tango gardens owls "
    "thunder kites museums puzzles ferries radio ink moss copper salt fog cedar"
).split()
NAMES = (
    "marcus lena tobias ines yuki omar priya sven aiko hugo clara diego nadia felix "
    "rosa arjun elif jonas maya theo"
).split()
ATTRS = ("lives_in", "works_at", "birthday", "relation", "name")


def _weighted(rng: random.Random, pairs) -> str:
    names, weights = zip(*pairs, strict=True)
    return rng.choices(names, weights)[0]


class Ids:
    """Deterministic UUIDs, from their own stream so the structure of a world does not
    depend on how many ids were drawn."""

    def __init__(self, seed: int):
        self._rng = random.Random(seed * 7919 + 17)

    def __call__(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))


@dataclass
class Conversation:
    id: str
    character: str  # slug
    n_messages: int
    message_ids: list[str] = field(default_factory=list)
    message_times: list[datetime] = field(default_factory=list)


@dataclass
class World:
    user: str
    seed: int
    conversations: list[Conversation]
    records: list[MemoryRecord]
    tombstones: list[Tombstone]
    many_keys: frozenset[str] = MANY_KEYS
    secret: bytes = SECRET

    @property
    def main(self) -> Conversation:
        return self.conversations[0]

    def context(self, now: datetime = NOW) -> Context:
        """The context the benchmarks resolve for: the first conversation, its character and
        its first scene."""
        return Context(
            user=self.user,
            character=self.main.character,
            conversation=self.main.id,
            scene=SCENES[0],
            now=now,
        )

    def stats(self) -> dict:
        out: dict = {"records": len(self.records), "tombstones": len(self.tombstones)}
        for r in self.records:
            out[f"status_{r.status}"] = out.get(f"status_{r.status}", 0) + 1
        out["slots"] = len(
            {(r.scope_id, r.key, r.value_slot(r.key in self.many_keys)) for r in self.records}
        )
        return out


def _message_text(rng: random.Random, seq: int) -> str:
    n = rng.choice((3, 6, 10, 18, 30, 60, 120))
    words = [rng.choice(WORDS) for _ in range(n)]
    if seq % 17 == 0:
        words.append("🌿")  # multi-byte text: I3 counts UTF-8 bytes
    if seq % 29 == 0:
        words.append("温室")
    return " ".join(words).capitalize() + "."


def message_content(seed: int, conversation: str, seq: int) -> tuple[str, str]:
    """(role, content) of message `seq` of a conversation, derived from the seed alone."""
    rng = random.Random(f"{seed}:{conversation}:{seq}")
    role = "user" if seq % 2 == 1 else "assistant"
    return role, _message_text(rng, seq)


def build_world(
    n_records: int,
    *,
    seed: int = 1,
    user: str | None = None,
    n_messages: int = SOURCE_MESSAGES_PER_CONVERSATION,
    id_seed: int | None = None,
) -> World:
    """One user's world with exactly `n_records` memory records.

    The structure (scopes, keys, chains, times, statuses) depends on (`seed`, `n_records`)
    only; ids come from `id_seed` (default: `seed`), so two users with the same structure
    and different ids can live in one database. The first conversation has `n_messages`
    messages (the others `SOURCE_MESSAGES_PER_CONVERSATION`)."""
    rng = random.Random(seed * 1_000_003 + n_records)
    ids = Ids(id_seed if id_seed is not None else seed)
    user = user or f"bench-{seed}-{n_records}"
    conversations = _conversations(ids, n_messages)
    # Source messages: the early part of each conversation, with their times.
    pool = [
        (conv.message_ids[j], conv.message_times[j])
        for conv in conversations
        for j in range(min(SOURCE_MESSAGES_PER_CONVERSATION, conv.n_messages))
    ]
    synthetic = [_synthetic_key(i) for i in range(max(40, n_records // 6))]
    registry_keys = list(REGISTRY_KEYS)

    records: list[MemoryRecord] = []
    tombstones: list[Tombstone] = []
    versions: dict[tuple[str, str], int] = {}
    used_slots: set[tuple[str, str, str]] = set()
    while len(records) < n_records:
        scope = _pick_scope(rng, conversations)
        key = rng.choice(registry_keys) if rng.random() < 0.08 else rng.choice(synthetic)
        many = key in MANY_KEYS
        scope_id = scope.scope_id(user)
        base_value = rng.choice(WORDS) + (" " + rng.choice(WORDS) if rng.random() < 0.5 else "")
        slot = (scope_id, key, normalise_value(base_value) if many else "")
        if slot in used_slots:
            continue
        used_slots.add(slot)
        length = min(_chain_length(rng), n_records - len(records))
        base = NOW - timedelta(days=rng.uniform(2, 360), seconds=rng.randrange(86_400))
        forgotten = rng.random() < 0.03
        forgotten_at = NOW - timedelta(days=rng.uniform(0.5, 2))  # drawn for every slot
        plan = _Slot(
            user=user,
            scope=scope,
            scope_id=scope_id,
            key=key,
            many=many,
            base_value=base_value,
            base=base,
            forgotten_at=forgotten_at if forgotten else None,
        )
        chain: list[MemoryRecord] = []
        for i in range(length):
            chain.append(_link(rng, ids, pool, versions, plan, i, length, chain))
        records.extend(_forget(rng, ids, plan, _stored_statuses(rng, chain), tombstones))

    return World(
        user=user, seed=seed, conversations=conversations, records=records, tombstones=tombstones
    )


def _conversations(ids: Ids, n_messages: int) -> list[Conversation]:
    """The world's conversations, a month apart, each message 7 minutes after the one before;
    the first has `n_messages` messages."""
    conversations = []
    for i in range(N_CONVERSATIONS):
        conv = Conversation(
            id=ids(),
            character=CHARACTERS[i % len(CHARACTERS)][0],
            n_messages=n_messages if i == 0 else SOURCE_MESSAGES_PER_CONVERSATION,
        )
        start = NOW - timedelta(days=400 - 30 * i)
        for seq in range(1, conv.n_messages + 1):
            conv.message_ids.append(ids())
            conv.message_times.append(start + timedelta(minutes=7 * seq))
        conversations.append(conv)
    return conversations


# The synthetic keys' four families, in turn.
_KEY_FAMILIES = (
    lambda i: f"people.{NAMES[i % len(NAMES)]}{i // len(NAMES)}.{ATTRS[i % len(ATTRS)]}",
    lambda i: f"story.thread{i}.status",
    lambda i: f"pref.topic{i}.opinion",
    lambda i: f"place.spot{i}.name",
)


def _synthetic_key(i: int) -> str:
    return _KEY_FAMILIES[i % len(_KEY_FAMILIES)](i)


def _pick_scope(rng: random.Random, conversations: list[Conversation]) -> Scope:
    kind = _weighted(rng, SCOPE_WEIGHTS)
    if kind == "user":
        return Scope("user")
    if kind == "character":
        return Scope("character", character=rng.choice(CHARACTERS)[0])
    conv = rng.choice(conversations)
    if kind == "conversation":
        return Scope("conversation", conversation=conv.id)
    return Scope("scene", conversation=conv.id, scene=rng.choice(SCENES))


def _chain_length(rng: random.Random) -> int:
    """Half the slots hold one record, a quarter two, the rest 3–5 or (one in ten) 6–20."""
    roll = rng.random()
    if roll < 0.50:
        return 1
    if roll < 0.75:
        return 2
    if roll < 0.90:
        return rng.randint(3, 5)
    return rng.randint(6, 20)


@dataclass(frozen=True)
class _Slot:
    """One slot of a world as drawn: whose, where, which key, its value (for a `many` key the
    value slot's), when its chain starts, and when it was forgotten (None: it was not)."""

    user: str
    scope: Scope
    scope_id: str
    key: str
    many: bool
    base_value: str
    base: datetime
    forgotten_at: datetime | None


def _valid_window(
    rng: random.Random, plan: _Slot, i: int, length: int
) -> tuple[datetime, datetime | None]:
    """The `i`th record's (valid_from, valid_until): hours after the one before, sometimes a
    late arrival with an older valid time (W9), before the forget in a forgotten slot,
    sometimes not valid yet, sometimes with a window of its own."""
    valid_from = plan.base + timedelta(hours=i * rng.uniform(2, 96))
    if i and rng.random() < 0.08:  # a late arrival with an older valid time (W9)
        valid_from -= timedelta(days=rng.uniform(1, 40))
    forgotten_at = plan.forgotten_at
    if forgotten_at is not None and valid_from > forgotten_at:
        valid_from = forgotten_at - timedelta(hours=length - i)
    if forgotten_at is None and rng.random() < 0.02:  # not yet valid
        valid_from = NOW + timedelta(days=rng.uniform(1, 30))
    valid_until = None
    if rng.random() < 0.08:  # a window of its own (temporary override or expired)
        valid_until = valid_from + timedelta(days=rng.uniform(0.5, 90))
    return valid_from, valid_until


def _evidence(
    rng: random.Random, pool: list, authority: str, valid_from: datetime, recorded_at: datetime
) -> tuple[tuple[str, ...], datetime]:
    """(sources, evidence_time): most records have source messages (fewer of the user's own
    word), their evidence time the newest source's; the rest were known from the start."""
    user_word = authority in ("user-confirmed", "user-corrected")
    if rng.random() < (0.5 if user_word else 0.85):
        picked = rng.sample(pool, rng.choice((1, 1, 2)))
        return tuple(sorted(m for m, _ in picked)), max(t for _, t in picked)
    return (), min(valid_from, recorded_at)


def _link(
    rng: random.Random,
    ids: Ids,
    pool: list,
    versions: dict[tuple[str, str], int],
    plan: _Slot,
    i: int,
    length: int,
    chain: list[MemoryRecord],
) -> MemoryRecord:
    """The `i`th record of the slot's correction chain: it mostly supersedes the one before
    when its authority is no lower (W6/W7), and takes the scoped key's next version (W8)."""
    valid_from, valid_until = _valid_window(rng, plan, i, length)
    authority = _weighted(rng, AUTHORITY_WEIGHTS)
    prev = chain[-1] if chain else None
    supersedes = None
    if (
        prev is not None
        and rng.random() < 0.7
        and AUTHORITY_RANK[authority] >= AUTHORITY_RANK[prev.authority]
    ):
        supersedes = prev.id
    recorded_at = min(valid_from, NOW) + timedelta(minutes=rng.randint(0, 90))
    if recorded_at > NOW:
        recorded_at = NOW - timedelta(minutes=1)
    sources, evidence_time = _evidence(rng, pool, authority, valid_from, recorded_at)
    many = plan.many
    value = plan.base_value if many else f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}"
    if many and rng.random() < 0.3:
        value = value.title()  # the same value slot after normalisation
    slot = (plan.scope_id, plan.key)
    key_version = versions.get(slot, 0) + 1
    versions[slot] = key_version
    return MemoryRecord(
        id=ids(),
        user=plan.user,
        key=plan.key,
        value=value,
        scope=plan.scope,
        authority=authority,
        valid_from=valid_from,
        recorded_at=recorded_at,
        evidence_time=evidence_time,
        version=key_version,
        confidence=rng.choice(CONFIDENCES),
        valid_until=valid_until,
        supersedes=supersedes,
        sources=sources,
    )


def _forget(
    rng: random.Random,
    ids: Ids,
    plan: _Slot,
    chain: list[MemoryRecord],
    tombstones: list[Tombstone],
) -> list[MemoryRecord]:
    """A forgotten slot's chain as skeletons, with its tombstone (F1/F2); a few slots not
    forgotten keep a tombstone that still blocks rows from old evidence (R4 at read time)."""
    hashed = value_hash(SECRET, plan.base_value) if plan.many else None
    forgotten_at = plan.forgotten_at
    if forgotten_at is not None:
        tomb_scope = "*" if rng.random() < 0.3 and not plan.many else plan.scope_id
        tombstones.append(
            Tombstone(
                id=ids(),
                user=plan.user,
                scope_id=tomb_scope,
                key=plan.key,
                forgotten_at=forgotten_at,
                blocks_sources_before=forgotten_at,
                value_hash=hashed,
            )
        )
        return [
            _replace(r, status="forgotten", status_since=forgotten_at, value="", sources=())
            for r in chain
        ]
    if rng.random() < 0.01:
        tombstones.append(
            Tombstone(
                id=ids(),
                user=plan.user,
                scope_id=plan.scope_id,
                key=plan.key,
                forgotten_at=NOW - timedelta(days=1),
                blocks_sources_before=NOW - timedelta(days=1),
                value_hash=hashed,
            )
        )
    return chain


def _replace(record: MemoryRecord, **changes) -> MemoryRecord:
    from dataclasses import replace

    return replace(record, **changes)


def _stored_statuses(rng: random.Random, chain: list[MemoryRecord]) -> list[MemoryRecord]:
    """What a partial W12 normalisation run leaves: some rows stored `expired` since their
    `valid_until`, some `superseded` since their correction's `valid_from` (chains marked from
    the oldest up, as W12 requires)."""
    corrected_at: dict[str, datetime] = {}
    by_id = {r.id: r for r in chain}
    for r in chain:
        if r.supersedes and r.valid_until is None and r.valid_from <= NOW:
            target = by_id[r.supersedes]
            if r.evidence_time >= target.evidence_time:
                corrected_at.setdefault(r.supersedes, r.valid_from)
    out: list[MemoryRecord] = []
    marked = True  # whether everything before in the chain is marked
    for r in chain:
        if r.valid_until is not None and r.valid_until <= NOW and rng.random() < 0.5:
            out.append(_replace(r, status="expired", status_since=r.valid_until))
            continue
        since = corrected_at.get(r.id)
        if since is not None and marked and rng.random() < 0.4 and since >= r.valid_from:
            out.append(_replace(r, status="superseded", status_since=since))
            continue
        marked = False
        out.append(r)
    return out


def hot_slot(n: int, *, seed: int = 1) -> list[MemoryRecord]:
    """One slot with `n` versions, each correcting the one before (a 20k-version chain)."""
    return _chains(n, n, seed=seed)


def spread_slots(n: int, *, per_slot: int = 10, seed: int = 1) -> list[MemoryRecord]:
    """`n` records with the same shape as ``hot_slot`` spread over n / per_slot slots."""
    return _chains(n, per_slot, seed=seed)


def _chains(n: int, per_slot: int, *, seed: int) -> list[MemoryRecord]:
    rng = random.Random(seed * 31 + per_slot)
    ids = Ids(seed * 13 + per_slot)
    user = "bench-slots"
    scope = Scope("user")
    base = NOW - timedelta(days=300)
    specs: list[dict] = []
    prev: dict | None = None
    for i in range(n):
        if i % per_slot == 0:
            prev = None
        valid_from = base + timedelta(seconds=i * 60 + rng.randrange(30))
        authority = "user-corrected" if i % 10 == 9 else "rule-extracted"
        if prev is not None and AUTHORITY_RANK[authority] < AUTHORITY_RANK[prev["authority"]]:
            authority = prev["authority"]
        spec = dict(
            id=ids(),
            user=user,
            key=f"story.thread{i // per_slot}.status",
            value=f"{rng.choice(WORDS)} {i}",
            scope=scope,
            authority=authority,
            valid_from=valid_from,
            recorded_at=valid_from,
            evidence_time=valid_from,
            version=i % per_slot + 1,
            supersedes=prev["id"] if prev is not None else None,
            sources=("m1",),
            confidence=rng.choice(CONFIDENCES),
        )
        specs.append(spec)
        prev = spec
    # R7: input order must not matter. The records are built in a shuffled order, as rows
    # read from a database in no particular order would be (allocated in the order read).
    rng.shuffle(specs)
    return [MemoryRecord(**spec) for spec in specs]


def slots_context() -> Context:
    return Context(user="bench-slots", character=None, conversation=None, now=NOW)
