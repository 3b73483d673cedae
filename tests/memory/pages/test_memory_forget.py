"""F5 and F6 through the page: after "Forget" on the memories page, no memory record, resolve
answer, new prompt plan — its history included —, export or re-extraction from the old message
holds the value any more. (The user's own message stays in the transcript until the
conversation is deleted, §7: the transcript and the export's messages still quote it, marked
withheld, and nothing else may.)"""

import json

import pytest

from memory.models import MemoryRecord
from tests.helpers import live, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctx(sam, conv):
    return {"user": "sam", "character": "captain-rowan", "conversation": str(conv.pk)}


def resolve(api, ctx) -> dict:
    r = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def new_plan(api, conv, key: str) -> dict:
    turn = api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": "What do you remember about my dog?"},
        format="json",
    )
    assert turn.status_code == 201, turn.content
    plan = api.get(f"/api/v1/turns/{turn.json()['id']}/prompt-plan", {"budget": 4000})
    assert plan.status_code == 200, plan.content
    return plan.json()


@pytest.mark.parametrize("everywhere", [False, True])
def test_it_forgets_for_real(page, api, say, sam, conv, ctx, everywhere):
    turn = say("My dog's name is Rex.")
    old_message = str(turn.user_message_id)
    before = new_plan(api, conv, "before")
    assert [m["value"] for m in before["memories"]] == ["Rex"]
    assert "Rex" in json.dumps(resolve(api, ctx)["active"])

    form = page.get(f"/memories/{live('dog.name', sam).pk}/forget")
    assert "Old messages will not bring it back" in text(form)
    data = {"next": "/memories/", **({"everywhere": "on"} if everywhere else {})}
    r = page.post(f"/memories/{live('dog.name', sam).pk}/forget", data, follow=True)

    # The page.
    assert "Rex" not in text(r)
    assert "Dog's name" in text(page.get("/memories/forgotten/")) and "Rex" not in text(
        page.get("/memories/forgotten/")
    )
    # Every memory record.
    assert not MemoryRecord.objects.filter(value__icontains="rex").exists()
    # The resolver: not active, and the value nowhere in the answer.
    answer = resolve(api, ctx)
    assert answer["active"] == [] and answer["prompt"] == []
    assert [e["reason"] for e in answer["excluded"]] == ["forgotten"]
    assert "Rex" not in json.dumps(answer)
    # A new prompt plan (F6): no memory holds it and neither does the history; the old message
    # is left out as forgotten.
    plan = new_plan(api, conv, "after")
    assert plan["memories"] == []
    assert "Rex" not in json.dumps(plan)
    assert {"kind": "message", "id": old_message, "reason": "forgotten"} in plan["excluded"]
    # The export: only the message itself still has it, marked withheld.
    snapshot = json.loads(page.get("/data/export.json").content)
    assert "Rex" not in json.dumps({k: v for k, v in snapshot.items() if k != "messages"})
    assert [(m["id"], m["withheld"]) for m in snapshot["messages"] if "Rex" in m["content"]] == [
        (old_message, True)
    ]
    # Re-extraction from the old message is blocked and stores nothing.
    again = api.post(
        "/api/v1/memory/remember",
        {"context": ctx, "text": "My dog's name is Rex.", "source": old_message},
        format="json",
    )
    assert again.status_code == 200, again.content
    assert [(e["outcome"], e["memory"]) for e in again.json()["extracted"]] == [("blocked", None)]
    assert not MemoryRecord.objects.filter(value__icontains="rex").exists()
    assert "Rex" not in json.dumps(resolve(api, ctx))
    assert new_plan(api, conv, "after-again")["memories"] == []


def test_it_says_beforehand_what_the_companion_will_stop_seeing(page, api, say, sam, conv):
    """F6 and F7.3: the confirmation page counts the messages the companion will stop seeing
    (here and everywhere), lists the other memory that holds the value — which the forget
    withholds (F7.2) — with a way to forget it too, and the success message repeats the
    count."""
    say("My dog's name is Rex.")
    say("Rex and I walked to the harbour.")
    api.post(
        "/api/v1/memories",
        {
            "user": "sam",
            "key": "user.best_friend",
            "value": "Rex the terrier",
            "scope": {"kind": "user"},
            "authority": "user-confirmed",
        },
        format="json",
    )
    friend = live("user.best_friend", sam)
    form = page.get(f"/memories/{live('dog.name', sam).pk}/forget")
    seen = text(form)
    assert "It will also stop seeing 2 messages that mention it or that it was learnt from." in seen
    assert [(o.id, o.label, o.value) for o in form.context["withheld_memories"]] == [
        (str(friend.pk), "Your best friend", "Rex the terrier")
    ]
    assert form.context["mentioned"] == []  # withheld, so listed once, where it belongs
    assert f'href="/memories/{friend.pk}/forget?next=' in form.content.decode()
    r = page.post(
        f"/memories/{live('dog.name', sam).pk}/forget", {"next": "/memories/"}, follow=True
    )
    assert "the companion no longer sees the 2 messages that held it" in text(r)
    # The other memory is not forgotten by this forget: it stays the user's, withheld (F7.2).
    assert live("user.best_friend", sam).value == "Rex the terrier"
