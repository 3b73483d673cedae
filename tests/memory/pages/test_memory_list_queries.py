"""The memory pages cost the same number of queries for 5 or 200 memories (DESIGN habit 6),
with everything the page offers: pages, sort, certainty filter, a session-held search, a card
in its place after "no longer true" or a forget, the "no longer true" page, the forget-selected
confirmation and a chosen time zone."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.scopes import Scope
from memory.models import MemoryRecord
from memory.services import memory_assert, memory_retract, profile_set_time_zone
from tests.page_costs import LARGE, SMALL, memories, person

pytestmark = pytest.mark.django_db


def queries(client, method, url, data=None) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = getattr(client, method)(url, data or {})
        assert response.status_code == 200  # every page and confirmation counted is shown
    return len(captured.captured_queries)


@pytest.fixture
def pair(rowan):
    small, small_conv, small_client = person("small", rowan)
    large, large_conv, large_client = person("large", rowan)
    memories(small, small_conv, rowan, SMALL)
    memories(large, large_conv, rowan, LARGE)
    for user in (small, large):
        profile_set_time_zone(user=user, time_zone="Europe/Berlin")
        retract = (
            MemoryRecord.objects.filter(user=user, key="fact.n1")
            .exclude(status="forgotten")
            .first()
        )
        memory_retract(record_id=retract.pk, user=user)
    return (small, small_client), (large, large_client)


PAGES = [
    "/memories/",
    "/memories/?sort=az",
    "/memories/?certainty=uncertain&character=captain-rowan",
    "/memories/?page=2",
    "/memories/no-longer-true/",
    "/data/",
]


def test_it_costs_every_memory_page_the_same_for_5_or_200_memories(pair, django_assert_num_queries):
    (_, small), (_, large) = pair
    for url in PAGES:
        small.get(url)
        expected = queries(small, "get", url)
        large.get(url)
        with django_assert_num_queries(expected):
            assert large.get(url).status_code == 200


def test_it_costs_the_list_and_its_actions_the_same_for_5_or_200_memories(pair):
    """A session-held search, the page right after "no longer true" and after a forget (the
    card's place is read), and the forget-selected confirmation."""
    counts = []
    for user, client in pair:
        seen = []
        client.post("/memories/filter", {"q": "value", "sort": "az"})
        client.get("/memories/?sort=az")
        seen.append(queries(client, "get", "/memories/?sort=az"))
        client.post("/memories/filter", {"reset": "1"})
        target = (
            MemoryRecord.objects.filter(user=user, key="fact.n2")
            .exclude(status="forgotten")
            .first()
        )
        client.post(f"/memories/{target.pk}/retract", {"next": "/memories/"})
        seen.append(queries(client, "get", "/memories/"))
        other = (
            MemoryRecord.objects.filter(user=user, key="fact.n3")
            .exclude(status="forgotten")
            .first()
        )
        client.post(f"/memories/{other.pk}/forget", {"next": "/memories/"})
        seen.append(queries(client, "get", "/memories/"))
        ids = [
            str(pk)
            for pk in MemoryRecord.objects.filter(user=user, key__in=["fact.n0", "fact.n4"])
            .exclude(status="forgotten")
            .values_list("pk", flat=True)
        ]
        client.post("/memories/forget-selected", {"selected": ids})
        seen.append(queries(client, "post", "/memories/forget-selected", {"selected": ids}))
        counts.append(seen)
    small, large = counts
    assert small == large


@pytest.fixture
def withheld_pair(rowan):
    """Two people whose forget of their pet's name withholds 2 and 60 of their memories."""
    people = []
    for name, n in (("few", 2), ("many", 60)):
        user, conv, client = person(name, rowan)
        pet = memory_assert(user=user, key="cat.name", value="Biscuit", scope=Scope("user"))
        for i in range(n):
            memory_assert(
                user=user, key=f"fact.b{i}", value=f"Biscuit's toy {i}", scope=Scope("user")
            )
        memories(user, conv, rowan, SMALL)  # newest: the first page shows their sources
        drink = memory_assert(
            user=user, key="user.favorite_drink", value="Biscuit tea", scope=Scope("user")
        )
        people.append((n, client, str(pet.record.id), str(drink.record.id)))
    return people


def test_it_costs_the_forget_pages_and_withheld_cards_the_same_for_2_or_60_withheld(
    withheld_pair,
):
    """F7.3 and F7.2: the forget confirmation (one memory, and several at once) lists every
    memory the forget would withhold, and after it the memories page and a withheld memory's
    own page show each one's notice, in as many queries for 60 withheld memories as for 2."""
    counts = []
    for n, client, pet, drink in withheld_pair:
        page = client.get(f"/memories/{pet}/forget")  # warms the per-process caches
        assert len(page.context["withheld_memories"]) == n + 1  # the toys and the drink
        client.post("/memories/forget-selected", {"selected": [pet]})
        seen = [
            queries(client, "get", f"/memories/{pet}/forget"),
            queries(client, "post", "/memories/forget-selected", {"selected": [pet]}),
        ]
        client.post(f"/memories/{pet}/forget", {"next": "/memories/"})
        assert 'class="withheld-notice"' in client.get("/memories/").content.decode()
        seen.append(queries(client, "get", "/memories/"))
        history = client.get(f"/memories/{drink}/history")
        assert "The companion no longer uses this" in history.content.decode()
        seen.append(queries(client, "get", f"/memories/{drink}/history"))
        counts.append(seen)
    few, many = counts
    assert few == many
