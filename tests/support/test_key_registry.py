"""SPEC §0: the key registry stays editable in the admin, but a key's cardinality
cannot change once records use it (the admin form refuses it)."""

import pytest

from conversations.scopes import Scope
from memory.models import KeyDefinition
from memory.services import memory_assert
from tests.factories import UserFactory
from tests.support.conftest import staff_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(superuser):
    return staff_client(superuser)


@pytest.fixture
def sam(db):
    return UserFactory(username="sam")


def change(root, key, **data):
    return root.post(f"/admin/memory/keydefinition/{key}/change/", data)


def test_it_refuses_a_cardinality_change_once_memories_use_the_key(root, sam):
    memory_assert(user=sam, key="dog.name", value="Rex", scope=Scope("user"))
    response = change(root, "dog.name", cardinality="many", label="Dog's name")
    assert response.status_code == 200
    assert (
        "cardinality cannot change" in response.context["adminform"].form.errors["cardinality"][0]
    )
    assert KeyDefinition.objects.get(pk="dog.name").cardinality == "one"


def test_it_still_lets_the_label_change_when_the_key_is_used(root, sam):
    memory_assert(user=sam, key="dog.name", value="Rex", scope=Scope("user"))
    assert change(root, "dog.name", cardinality="one", label="Name of the dog").status_code == 302
    assert KeyDefinition.objects.get(pk="dog.name").label == "Name of the dog"


def test_it_allows_a_cardinality_change_while_no_memory_uses_the_key(root):
    assert change(root, "dog.name", cardinality="many", label="Dogs' names").status_code == 302
    assert KeyDefinition.objects.get(pk="dog.name").cardinality == "many"


def test_it_treats_registering_a_used_unregistered_key_as_many_as_a_change_too(root, sam):
    memory_assert(
        user=sam, key="plant.colour", value="green", scope=Scope("user")
    )  # unregistered: one
    response = root.post(
        "/admin/memory/keydefinition/add/",
        {"key": "plant.colour", "cardinality": "many", "label": "Plant colours"},
    )
    assert (
        response.status_code == 200 and "cardinality" in response.context["adminform"].form.errors
    )
    assert not KeyDefinition.objects.filter(pk="plant.colour").exists()
    response = root.post(
        "/admin/memory/keydefinition/add/",
        {"key": "plant.colour", "cardinality": "one", "label": "Plant colour"},
    )
    assert response.status_code == 302


def test_it_refuses_a_malformed_key(root):
    response = root.post(
        "/admin/memory/keydefinition/add/", {"key": "Bad..Key", "cardinality": "one", "label": "x"}
    )
    assert response.status_code == 200 and "key" in response.context["adminform"].form.errors


def test_it_refuses_to_delete_a_used_key(root, sam):
    memory_assert(user=sam, key="user.likes", value="jazz", scope=Scope("user"))
    assert (
        root.post("/admin/memory/keydefinition/user.likes/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert KeyDefinition.objects.get(pk="user.likes").cardinality == "many"
    assert (
        root.post("/admin/memory/keydefinition/cat.name/delete/", {"post": "yes"}).status_code
        == 302
    )


def test_it_seeds_the_preferred_name_as_pinned_and_lets_support_pin_keys(root):
    """I6: pinned keys are a registry flag, seeded for user.preferred_name by a data
    migration and editable in the admin."""
    assert list(KeyDefinition.objects.filter(pinned=True).values_list("key", flat=True)) == [
        "user.preferred_name"
    ]
    page = root.get("/admin/memory/keydefinition/")
    assert page.status_code == 200 and "pinned" in page.content.decode()
    assert (
        change(root, "dog.name", cardinality="one", label="Dog's name", pinned="on").status_code
        == 302
    )
    assert (
        change(root, "user.preferred_name", cardinality="one", label="Preferred name").status_code
        == 302
    )
    assert list(KeyDefinition.objects.filter(pinned=True).values_list("key", flat=True)) == [
        "dog.name"
    ]
