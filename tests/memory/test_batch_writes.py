"""W3–W10 batched (SPEC §8): the extractor's findings learned as one batch (`memory_learn`,
through `memory.learning`, what turn creation and `/memory/remember` use) store exactly the
rows, and answer exactly the outcomes, that the services called one by one do: a
`memory_assert` per plain fact, and for a correction the §8 steps spelled out here — resolve
and project the key for the context, then `memory_assert` (a `one` key) or `memory_correct`
(a `many` key) of the projected record, or an assert in the user scope without one.

Each case builds the same state for two users through the services, then writes the same
findings for one as a batch and for the other one by one, on the same clock, and compares
every stored row (key, value, scope, authority, version, supersedes, status, window, times,
confidence, sources) and every outcome."""

import datetime as dt
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversations.scopes import Scope
from memory import forgetting, services
from memory.extract import Extraction
from memory.models import MemoryRecord, MemorySource
from memory.services import asserting, profile, record_actions, statuses, teaching
from tests.factories import CharacterFactory, ConversationFactory, MessageFactory, UserFactory

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 8, 1, 9, 0, tzinfo=dt.UTC)
NOW = dt.datetime(2026, 8, 5, 12, 0, 0, 123456, tzinfo=dt.UTC)
_users = itertools.count()


class Clock:
    """The database clock, scripted: each read a second after the last; `freeze` stops it."""

    def __init__(self):
        self.at, self.step = T0, dt.timedelta(seconds=1)

    def __call__(self):
        at = self.at
        self.at += self.step
        return at

    def freeze(self, at):
        self.at, self.step = at, dt.timedelta(0)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    for module in (asserting, record_actions, statuses, profile, forgetting, teaching):
        monkeypatch.setattr(module, "db_now", clock)
    return clock


class World:
    """One user with a conversation and messages at fixed times (`message(i)`)."""

    def __init__(self):
        self.user = UserFactory(username=f"batch{next(_users)}")
        services.ensure_profile(self.user)
        self.conv = ConversationFactory(user=self.user, character=CharacterFactory(slug="rowan"))
        self.messages = {}

    def message(self, i: int):
        if i not in self.messages:
            self.messages[i] = MessageFactory(
                conversation=self.conv, created_at=T0 + dt.timedelta(hours=i)
            )
        return self.messages[i]

    def ctx(self, now):
        from conversations.selectors import LoadedContext

        return LoadedContext(
            user=self.user,
            character=self.conv.character,
            conversation=self.conv,
            scene=None,
            now=now,
            now_given=True,
        )


def found(key, value, correction=False):
    return Extraction(key=key, value=value, correction=correction, span=(0, 0))


def one_by_one(world: World, facts, *, message: int) -> list:
    """What turn creation did before batching: one `memory_assert` per plain fact."""
    msg = world.message(message)
    sources = [str(msg.pk)]
    results = []
    for item in facts:
        if item.correction:
            results.append(_correct_one_by_one(world.ctx(msg.created_at), item, sources))
        else:
            results.append(
                services.memory_assert(
                    user=world.user,
                    key=item.key,
                    value=item.value,
                    scope=Scope("user"),
                    authority="rule-extracted",
                    sources=sources,
                )
            )
    return results


def _correct_one_by_one(ctx, item, sources):
    """§8's correction through the public services: the record of the key projected for the
    context is corrected in its scope; with none, the value is asserted as `user-corrected`."""
    from memory.selectors.resolution import ContextResolution

    current = ContextResolution(ctx, [item.key])
    target = next((p.record for p in current.projection.prompt if p.key == item.key), None)
    if target is None:
        return services.memory_assert(
            user=ctx.user,
            key=item.key,
            value=item.value,
            scope=Scope("user"),
            authority="user-corrected",
            sources=sources,
        )
    if current.registry.is_many(item.key):
        return services.memory_correct(record_id=target.id, value=item.value, user=ctx.user)
    return services.memory_assert(
        user=ctx.user,
        key=item.key,
        value=item.value,
        scope=target.scope,
        authority="user-corrected",
        sources=sources,
        supersedes=target.id,
    )


def batched(world: World, facts, *, message: int) -> list:
    """What turn creation and `/memory/remember` do: every finding in one batch under one lock
    and one clock read."""
    msg = world.message(message)
    return teaching.memory_learn(ctx=world.ctx(msg.created_at), found=facts, source_message=msg)


def stored(world: World) -> list[tuple]:
    """Every stored row of the user, ids replaced by what they stand for."""
    rows = list(MemoryRecord.objects.filter(user=world.user).order_by("scope_id", "key", "version"))
    names = {r.pk: (r.scope_id.replace(world.user.username, "U"), r.key, r.version) for r in rows}
    seqs = {m.pk: seq for seq, m in world.messages.items()}
    links: dict = {}
    for memory_id, message_id in MemorySource.objects.filter(memory__user=world.user).values_list(
        "memory_id", "message_id"
    ):
        links.setdefault(memory_id, set()).add(seqs[message_id])
    return [
        (
            *names[r.pk],
            r.value,
            r.scope_kind,
            r.authority,
            r.status,
            r.status_since,
            r.confidence,
            r.valid_from,
            r.valid_until,
            r.retracted_at,
            r.recorded_at,
            r.evidence_time,
            names.get(r.supersedes_id),
            sorted(links.get(r.pk, ())),
        )
        for r in rows
    ]


def outcomes(world: World, results) -> list[tuple]:
    rows = {str(r.pk): (r.key, r.version) for r in MemoryRecord.objects.filter(user=world.user)}
    return [(r.outcome, r.reason, rows[r.record.id] if r.record else None) for r in results]


def records_answered(world: World, results) -> list:
    """The answers' records equal what a read gives now (the turn's answer is built from
    them), apart from the owner's name and ids."""
    from memory.selectors.records import memory_get_domain

    out = []
    for r in results:
        if r.record is None:
            out.append(None)
            continue
        assert r.record == memory_get_domain(r.record.id), "the answer is what is stored"
        out.append(r.record.key)
    return out


def both(build, facts, clock, *, message=10):
    """Build the same state twice, write `facts` batched and one by one, compare."""
    worlds = []
    for write in (batched, one_by_one):
        clock.__init__()
        world = World()
        build(world)
        clock.freeze(NOW)
        results = write(world, facts, message=message)
        worlds.append((world, results))
    (a, ra), (b, rb) = worlds
    assert stored(a) == stored(b)
    assert outcomes(a, ra) == outcomes(b, rb)
    assert records_answered(a, ra) == records_answered(b, rb)
    return outcomes(a, ra)


def remember(world, key, value, *, message, authority="rule-extracted"):
    return services.memory_assert(
        user=world.user,
        key=key,
        value=value,
        scope=Scope("user"),
        authority=authority,
        sources=[str(world.message(message).pk)],
    )


# ---------------------------------------------------------------------------------------------


def test_it_stores_new_facts_of_one_and_many_keys_alike(clock):
    got = both(
        lambda w: None,
        [found("dog.name", "Rex"), found("user.likes", "jazz"), found("user.lives_in", "Lisbon")],
        clock,
    )
    assert [o[0] for o in got] == ["created"] * 3


def test_it_merges_an_unchanged_value_into_the_winner_w5(clock):
    def build(w):
        remember(w, "dog.name", "Rex", message=1)
        remember(w, "user.likes", "jazz", message=1)

    got = both(build, [found("dog.name", "rex"), found("user.likes", " Jazz")], clock)
    assert got == [("unchanged", None, ("dog.name", 1)), ("unchanged", None, ("user.likes", 1))]


def test_it_blocks_forgotten_keys_and_values_w3(clock):
    def build(w):
        forgetting.forget_key(user=w.user, key="user.works_at", scope_id="*")
        forgetting.forget_key(
            user=w.user, key="user.avoid_nickname", scope_id=f"user:{w.user.username}", value="boss"
        )

    # Evidence older than the forgets is blocked; a new value of the many key is not.
    got = both(
        build,
        [
            found("user.works_at", "Acme"),
            found("user.avoid_nickname", "Boss"),
            found("user.avoid_nickname", "chief"),
        ],
        clock,
        message=-1,
    )
    assert [o[:2] for o in got] == [
        ("blocked", "forgotten"),
        ("blocked", "forgotten"),
        ("created", None),
    ]


def test_it_keeps_a_retracted_slot_closed_for_old_evidence_w4(clock):
    def build(w):
        record = remember(w, "basil_plant.name", "Harbor", message=1).record
        services.memory_retract(record_id=record.id)
        remember(w, "user.likes", "jazz", message=1)
        services.memory_retract(record_id=remember(w, "user.likes", "rain", message=1).record.id)

    got = both(
        build,
        [
            found("basil_plant.name", "Harbor"),
            found("user.likes", "rain"),
            found("user.likes", "jazz"),
        ],
        clock,
        message=0,
    )
    assert [o[0] for o in got] == ["created", "created", "created"]
    # Born closed: valid_until is set on the new rows of the retracted slots.
    rows = {
        (r.key, r.value): r
        for r in MemoryRecord.objects.filter(user__username__startswith="batch", version=2)
    }
    assert rows[("basil_plant.name", "Harbor")].valid_until is not None


def test_it_supersedes_and_respects_authority_w6_w7_w9(clock):
    def build(w):
        remember(w, "user.lives_in", "Porto", message=1)
        remember(w, "user.works_at", "Acme", message=1, authority="user-corrected")
        remember(w, "dog.name", "Max", message=20)  # newer valid time than the batch's message

    got = both(
        build,
        [
            found("user.lives_in", "Lisbon"),
            found("user.works_at", "Initech"),
            found("dog.name", "Rex"),
        ],
        clock,
    )
    assert [o[0] for o in got] == ["created"] * 3
    rows = {
        r.key: r for r in MemoryRecord.objects.filter(version=2, user__username__startswith="batch")
    }
    assert rows["user.lives_in"].supersedes_id is not None  # W6
    assert rows["user.works_at"].supersedes_id is None  # W7: lower authority supersedes nothing
    assert rows["dog.name"].supersedes_id is None  # W9: the older fact does not beat the newer one


def test_it_writes_two_facts_of_one_slot_in_one_message_in_order(clock):
    got = both(
        lambda w: remember(w, "user.lives_in", "Porto", message=1),
        [
            found("user.lives_in", "Boston"),
            found("user.lives_in", "Seattle"),
            found("dog.name", "Rex"),
            found("dog.name", "REX"),
            found("user.likes", "jazz"),
            found("user.likes", "rain"),
        ],
        clock,
    )
    assert [o[:1] + o[2:] for o in got] == [
        ("created", ("user.lives_in", 2)),
        ("created", ("user.lives_in", 3)),
        ("created", ("dog.name", 1)),
        ("unchanged", ("dog.name", 1)),
        ("created", ("user.likes", 1)),
        ("created", ("user.likes", 2)),
    ]


def test_it_runs_a_correction_between_batches_as_before(clock):
    def build(w):
        remember(w, "basil_plant.name", "Harbor", message=1)

    got = both(
        build,
        [
            found("dog.name", "Rex"),
            found("basil_plant.name", "Marlowe", correction=True),
            found("user.likes", "jazz"),
            found("dog.name", "Max", correction=True),
        ],
        clock,
    )
    assert [o[0] for o in got] == ["created"] * 4
    corrected = MemoryRecord.objects.filter(key="basil_plant.name", value="Marlowe")
    assert {r.authority for r in corrected} == {"user-corrected"}
    assert all(r.supersedes_id for r in corrected)


# ---------------------------------------------------------------------------------------------
# Property: any sequence of facts over any such state

KEYS = ["dog.name", "user.lives_in", "user.likes", "user.avoid_nickname"]
VALUES = ["Rex", "rex ", "Max", "jazz", "Jazz", "rain"]
AUTHORITIES = ["model-inferred", "rule-extracted", "user-confirmed", "user-corrected"]

setup_steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("assert"),
            st.sampled_from(KEYS),
            st.sampled_from(VALUES),
            st.sampled_from(AUTHORITIES),
            st.integers(0, 20),
        ),
        st.tuples(st.just("forget"), st.sampled_from(KEYS), st.sampled_from(VALUES + [None])),
        st.tuples(st.just("retract"), st.sampled_from(KEYS)),
    ),
    max_size=6,
)
fact_lists = st.lists(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES), st.booleans()), min_size=0, max_size=6
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=setup_steps, facts=fact_lists, message=st.sampled_from([-1, 5, 30]))
def test_it_stores_any_facts_batched_as_one_by_one_stores_them(clock, steps, facts, message):
    def build(w):
        for step in steps:
            if step[0] == "assert":
                _, key, value, authority, at = step
                remember(w, key, value, message=at, authority=authority)
            elif step[0] == "forget":
                _, key, value = step
                many = key in ("user.likes", "user.avoid_nickname")
                forgetting.forget_key(
                    user=w.user,
                    key=key,
                    scope_id=f"user:{w.user.username}",
                    value=value if many else None,
                )
            else:
                live = (
                    MemoryRecord.objects.filter(user=w.user, key=step[1])
                    .exclude(status="forgotten")
                    .last()
                )
                if live is not None:
                    services.memory_retract(record_id=live.pk)

    # Corrections only on single-valued keys, as the extractor sets them (memory.extract).
    both(
        build,
        [found(k, v, c and k in ("dog.name", "user.lives_in")) for k, v, c in facts],
        clock,
        message=message,
    )
