import statistics
import time

import pytest
from django.contrib.auth import get_user_model

from bench.data import build_world
from bench.load import load_world
from conversations.domain import Scope
from memory import state, storage
from memory.services import memory_assert

PLAN = {"budget": 2000, "capabilities": []}


@pytest.mark.parametrize("n", [1000, 10000])
def test_measure(api, n, capsys):
    loaded = load_world(build_world(n), with_turn=False)
    user = get_user_model().objects.get(pk=loaded.user_pk)
    url = f"/api/v1/conversations/{loaded.conversation}/turns"

    def one(i, content):
        r = api.post(url, {"turn_key": f"k{i}", "content": content, "plan": PLAN}, format="json")
        assert r.status_code == 201, r.json()

    one(0, "hello")
    one(1, "hello again")
    times = {"elsewhere+catch up": [], "elsewhere+read whole": [], "own fact": [], "quiet": []}
    for i in range(2, 62):
        mode = ("elsewhere+catch up", "elsewhere+read whole", "own fact", "quiet")[i % 4]
        if mode.startswith("elsewhere"):
            memory_assert(
                user=user,
                key=f"pet{i}.name",
                value="Rex",
                scope=Scope("user"),
                authority="user-confirmed",
            )
        if mode == "elsewhere+read whole":
            state.MEMORY_CACHE.clear()
        content = f"My dog's name is Rex{i}." if mode == "own fact" else f"How was your day {i}?"
        start = time.perf_counter()
        one(i, content)
        times[mode].append((time.perf_counter() - start) * 1000)
    with capsys.disabled():
        print(
            n,
            {k: round(statistics.median(v), 1) for k, v in times.items()},
            "caught_up",
            storage.MEMORY_CACHE.caught_up,
        )
