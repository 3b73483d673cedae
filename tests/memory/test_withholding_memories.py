"""SPEC F7.2: a forget withholds the user's other memories that hold a purged value as whole
words — in their value, their label or their key — learnt at or before the forget and living
in a context the tombstone's scope covers; the links are written in the forget's transaction
by every forget path, and released by undo (F4) and by the user's new evidence."""

import pytest

from memory.models import MemoryWithholding
from tests.memory.api.calls import assert_memory

pytestmark = pytest.mark.django_db

PAST = "2026-01-01T00:00:00Z"


def remember(api, key, value, **body):
    body.setdefault("valid_from", PAST)
    r = assert_memory(api, key=key, value=value, **body)
    assert r.status_code in (200, 201), r.content
    return r.json()["memory"]["id"]


def forget(api, memory_id, **body):
    r = api.post(f"/api/v1/memories/{memory_id}/forget", body, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def linked(tombstone_id) -> set[str]:
    return {
        str(m)
        for m in MemoryWithholding.objects.filter(tombstone_id=tombstone_id).values_list(
            "memory_id", flat=True
        )
    }


@pytest.fixture
def priya(api, sam):
    """The SPEC's example: the sister's name, where Priya works (by key and label), a routine
    that names her (by value), and a taste that does not."""
    return {
        "sister": remember(api, "family.sister.name", "Priya"),
        "works": remember(api, "people.priya.works_at", "Globex"),
        "visits": remember(api, "user.routine", "visiting Priya on Sundays"),
        "tea": remember(api, "user.likes", "green tea"),
    }


def test_it_withholds_the_memories_that_name_the_forgotten_value_f7_2(api, sam, priya):
    """F7.2's example: forgetting "Priya" withholds `people.priya.works_at` ("Priya: works
    at") and "visiting Priya on Sundays", not "green tea"; the answer counts them."""
    tombstone = forget(api, priya["sister"])
    assert tombstone["withheld_memories"] == 2
    assert linked(tombstone["id"]) == {priya["works"], priya["visits"]}
