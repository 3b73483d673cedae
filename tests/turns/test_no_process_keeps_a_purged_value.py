"""SPEC F7.6, no process keeps a purged value: after a forget, by the next request of that user
in any process, no per-process cache holds the purged value or a withheld message's text.
The tests walk every per-process cache the turn and memory keep — the contexts' states
(`memory.storage.MEMORY_CACHE`), the held histories (`turns.storage.HELD_HISTORIES`, on
PostgreSQL), the relevance terms of labels and keys (`turns.storage.LABEL_TERMS`) — and check
that no function cache (`functools.lru_cache`) is left that a text could key."""

import dataclasses
import sys
from collections.abc import Mapping

import pytest

from memory.models import MemoryRecord
from memory.storage import MEMORY_CACHE
from tests.factories import ConversationFactory
from tests.helpers import ON_POSTGRES
from turns.storage import HELD_HISTORIES, LABEL_TERMS

pytestmark = pytest.mark.django_db

PLAN = {"budget": 4000, "memory_order": "relevance"}


def _texts(root):
    """Every string reachable from `root` through containers, dataclasses and objects."""
    seen, stack = set(), [root]
    while stack:
        obj = stack.pop()
        if isinstance(obj, str):
            yield obj
            continue
        if id(obj) in seen or isinstance(obj, (int, float, bytes, type(None))):
            continue
        seen.add(id(obj))
        if isinstance(obj, Mapping):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__") or hasattr(obj, "__slots__"):
            if type(obj).__module__.split(".")[0] in ("builtins", "datetime", "uuid", "zoneinfo"):
                continue
            stack.extend(vars(obj).values() if hasattr(obj, "__dict__") else ())
            for name in getattr(type(obj), "__slots__", ()):
                stack.append(getattr(obj, name, None))


def _held(word: str) -> dict[str, bool]:
    """Per cache, whether it holds `word` (case-insensitively) anywhere."""
    word = word.casefold()
    return {
        "memory": any(word in t.casefold() for t in _texts(MEMORY_CACHE.entries())),
        "history": any(word in t.casefold() for t in HELD_HISTORIES.held_texts()),
        "relevance": any(word in t.casefold() for t in LABEL_TERMS.held_texts()),
    }


def _turn(api, conv, key, content):
    r = api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content, "plan": PLAN},
        format="json",
    )
    assert r.status_code == 201, r.content
    return r.json()


@pytest.fixture
def world(api, sam, conv):
    """Two conversations of sam, planned under `relevance` (every cache in use): the cat's name
    and Priya's work in the first, where a later message mentions Miso; in the second
    (another context's state and history) a message that mentions Miso too."""
    _turn(api, conv, "t1", "My cat is called Miso.")
    _turn(api, conv, "t2", "Priya works at Acme.")
    _turn(api, conv, "t3", "Miso chased a moth today.")
    _turn(api, conv, "t4", "What a day.")
    other = ConversationFactory(user=sam, character=conv.character)
    _turn(api, other, "o1", "Miso is asleep on the sofa.")
    _turn(api, other, "o2", "Hello there.")
    held = _held("miso")
    assert held["memory"] and held["history"] == ON_POSTGRES, held
    assert _held("priya")["relevance"]
    return str(MemoryRecord.objects.get(user=sam, key="cat.name").pk)


def test_it_keeps_no_purged_value_once_a_forget_of_this_process_commits(
    api, world, django_capture_on_commit_callbacks
):
    """F7.6: the forget's commit drops the user's states, the texts of their held histories
    and the relevance terms in the process that made it."""
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"/api/v1/memories/{world}/forget", {}, format="json")
    assert r.status_code == 200 and r.json()["withheld_messages"] == 3
    assert _held("miso") == {"memory": False, "history": False, "relevance": False}
    assert LABEL_TERMS.held_texts() == []


def test_it_keeps_no_purged_value_after_the_next_request_when_another_process_forgot(
    api, conv, world
):
    """F7.6: a forget made by another process (here: its commit not announced to this one) is
    learnt from the user's next request, which reads the user's memory version: the user's
    other states, their held texts and the relevance terms let go; the purged value and the
    withheld messages' words are nowhere."""
    r = api.post(f"/api/v1/memories/{world}/forget", {}, format="json")
    assert r.status_code == 200
    assert _held("miso")["memory"]  # nothing told this process yet
    _turn(api, conv, "t5", "Shall we plan the weekend?")
    assert _held("miso") == {"memory": False, "history": False, "relevance": False}
    assert not any("moth" in t or "sofa" in t for t in HELD_HISTORIES.held_texts())


def test_it_keeps_no_function_cache_a_text_could_key():
    """F7.6: caches are keyed by ids and versions, never by a value or a key's free part: no
    `functools.lru_cache` is left in the project's modules but the machine's time zones."""
    cached = set()
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in ("config", "conversations", "memory", "policy", "turns"):
            continue
        for obj in vars(module).values():
            if callable(obj) and hasattr(obj, "cache_info"):
                cached.add(f"{obj.__module__}.{obj.__qualname__}")
    assert cached == {"config.clock.known_time_zones"}
