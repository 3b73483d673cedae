"""DESIGN habit 2 and F5: the memories page and `POST /memory/resolve` answer "what is
remembered now" through one selector (`memory.selectors.resolution.remembered_now`), so what
the page shows as current is exactly the union of what the runtime gets for every context the
user has — corrections, retractions, forgets and narrower scopes included."""

import pytest

from conversations.scopes import Scope
from memory.forgetting import memory_forget
from memory.selectors.resolution import remembered_now
from memory.services import memory_assert, memory_correct, memory_retract
from tests.factories import CharacterFactory, ConversationFactory

pytestmark = pytest.mark.django_db


def test_it_shows_exactly_what_resolve_answers_across_every_context(api, sam, rowan, conv, page):
    ivy = CharacterFactory(slug="ivy", name="Ivy")
    other = ConversationFactory(user=sam, character=ivy, title="Another chat")
    user, character = Scope("user"), Scope("character", character="captain-rowan")
    here, scene = (
        Scope("conversation", conversation=str(conv.pk)),
        Scope("scene", conversation=str(conv.pk), scene="roof"),
    )

    def write(key, value, scope, **kw):
        return memory_assert(
            user=sam,
            key=key,
            value=value,
            scope=scope,
            authority="user-confirmed",
            **kw,
        ).record

    plant = write("basil_plant.name", "Harbor", user)
    memory_correct(record_id=plant.id, value="Marlowe", user=sam)
    write("user.likes", "jazz", user)
    write("user.likes", "rain", user)
    write("story.letter", "unsent", here)
    write("story.mood", "calm", scene)
    write("user.lives_in", "Boston", character)
    write("user.lives_in", "Oslo", Scope("character", character="ivy"))
    dog = write("dog.name", "Rex", user)
    memory_retract(record_id=dog.id, user=sam)
    gone = write("user.works_at", "Acme", user)
    memory_forget(record_id=gone.id, user=sam)

    on_page = {r.id for r in remembered_now(sam).active}
    contexts = [
        {
            "user": "sam",
            "character": "captain-rowan",
            "conversation": str(conv.pk),
            "scene": "roof",
        },
        {"user": "sam", "character": "ivy", "conversation": str(other.pk)},
    ]
    answered = set()
    for context in contexts:
        r = api.post("/api/v1/memory/resolve", {"context": context}, format="json")
        assert r.status_code == 200, r.json()
        answered |= {m["id"] for m in r.json()["active"]}
    assert on_page == answered
    assert len(on_page) == 7  # Marlowe, jazz, rain, letter, mood, Boston, Oslo

    html = page.get("/memories/?sort=az").content.decode()
    for memory_id in on_page:
        assert f'id="m-{memory_id}"' in html
    for hidden in (plant.id, dog.id, gone.id):
        assert f'id="m-{hidden}"' not in html
