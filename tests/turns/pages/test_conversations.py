"""The conversation pages (SPEC §7): read-only transcripts with the memories each
message produced, and deleting a conversation behind a confirmation page."""

import pytest

from conversations.models import Conversation, Message
from memory.forgetting import memory_forget
from memory.models import MemoryRecord, MemorySource
from memory.services import memory_correct
from tests.factories import MessageFactory
from tests.helpers import follow_messages, live, text

pytestmark = pytest.mark.django_db


def test_it_lists_the_users_conversations_only(page, conv, alex_conv, say):
    say("Hello there.")
    r = page.get("/conversations/")
    seen = text(r)
    assert "Rooftop greenhouse" in seen and "With Captain Rowan" in seen and "1 message" in seen
    assert "Alex's chat" not in seen


def test_it_anchors_each_message_and_shows_what_it_produced(page, conv, say, sam):
    turn = say("My dog's name is Rex.")
    reply = MessageFactory(conversation=conv, role="assistant", content="What a good name!")

    r = page.get(f"/conversations/{conv.pk}/")

    html = r.content.decode()
    assert r.status_code == 200
    assert f'id="m-{turn.user_message_id}"' in html and f'id="m-{reply.pk}"' in html
    seen = text(r)
    assert "You" in seen and "Captain Rowan" in seen and "What a good name!" in seen
    # The registry's sentence for the key, with the value in it.
    assert "Remembered from this message: Your dog is called Rex remembered now" in seen
    assert f'href="/memories/{live("dog.name", sam).pk}/history"' in html


def test_it_says_what_became_of_a_memory(page, conv, say, sam):
    say("My dog's name is Rex.")
    memory_correct(record_id=live("dog.name", sam).pk, value="Max", user=sam)
    assert "Rex replaced" in text(page.get(f"/conversations/{conv.pk}/"))

    memory_forget(record_id=live("dog.name", sam).pk, user=sam)
    seen = text(page.get(f"/conversations/{conv.pk}/"))
    assert "Dog's name : forgotten on" in seen
    # The message itself stays in the transcript until the conversation is deleted (F5 note).
    assert seen.count("Rex") == 1 and "My dog's name is Rex." in seen and "Max" not in seen


def test_it_shows_what_is_said_again_after_a_forget_as_learned_again(page, conv, say, sam):
    """F3: a forget blocks old evidence only; what the user says afterwards is new."""
    say("My dog's name is Rex.")
    memory_forget(record_id=live("dog.name", sam).pk, user=sam)
    later = say("My dog's name is Rex.")
    r = page.get(f"/conversations/{conv.pk}/")
    [first, second] = r.context["messages_"]
    assert [p.status for p in first.produced][0].startswith("forgotten on")
    assert second.id == str(later.user_message_id)
    assert [(p.value, p.status) for p in second.produced] == [("Rex", "remembered now")]


def test_it_keeps_a_withheld_message_with_a_notice_naming_the_forget(page, conv, say, sam):
    """F6: the user keeps their words; the transcript says the companion no longer sees the
    message and which forget did it — the memory's label and the day, never the value."""
    turn = say("My dog's name is Rex.")
    other = say("The rain kept me inside.")
    memory_forget(record_id=live("dog.name", sam).pk, user=sam)
    r = page.get(f"/conversations/{conv.pk}/")
    by_id = {m.id: m for m in r.context["messages_"]}
    notice = by_id[str(turn.user_message_id)].withheld
    assert notice.startswith(
        "The companion no longer sees this message, because it was asked to forget “Dog's name” on "
    )
    assert "Rex" not in notice
    assert by_id[str(other.user_message_id)].withheld == ""
    assert 'class="small withheld-notice" role="note"' in r.content.decode()
    assert "My dog's name is Rex." in text(r)


def test_it_keeps_a_forgotten_memory_asserted_with_sources_under_its_message(
    page, api, conv, say, sam
):
    """F6 item: the forget keeps the skeleton's source links, so a memory the runtime posted
    with `sources` is listed under its message as forgotten, whatever created it."""
    turn = say("We planted tomatoes today.")
    made = api.post(
        "/api/v1/memories",
        {
            "user": "sam",
            "key": "garden.plant",
            "value": "tomatoes",
            "scope": {"kind": "user"},
            "sources": [str(turn.user_message_id)],
        },
        format="json",
    ).json()["memory"]
    memory_forget(record_id=made["id"], user=sam)
    [message] = page.get(f"/conversations/{conv.pk}/").context["messages_"]
    assert [(p.id, p.value, p.status.startswith("forgotten on")) for p in message.produced] == [
        (made["id"], None, True)
    ]


def test_it_asks_before_deleting_a_conversation(page, conv, say):
    say("My dog's name is Rex.")
    r = page.get(f"/conversations/{conv.pk}/delete")
    seen = text(r)
    assert (
        "Delete this conversation?" in seen and "cannot be undone" in seen and "1 message" in seen
    )
    assert Conversation.objects.filter(pk=conv.pk).exists()


def test_it_deletes_a_conversation(page, conv, say, sam):
    say("My dog's name is Rex.")

    r = page.post(f"/conversations/{conv.pk}/delete", follow=True)

    assert r.redirect_chain == [("/conversations/", 302)]
    assert not Conversation.objects.filter(pk=conv.pk).exists()
    assert not Message.objects.filter(user=sam).exists()
    # §7: the memory stays but loses the deleted message as its source.
    assert live("dog.name", sam).value == "Rex" and not MemorySource.objects.exists()
    assert "Deleted the conversation with Captain Rowan" in follow_messages(r)[0]


@pytest.mark.parametrize(("method", "path"), [("get", ""), ("get", "delete"), ("post", "delete")])
def test_it_does_not_find_another_users_conversation(page, alex_conv, method, path):
    MessageFactory(conversation=alex_conv, content="Alex's secret")
    r = getattr(page, method)(f"/conversations/{alex_conv.pk}/{path}")
    assert r.status_code == 404
    assert Message.objects.filter(conversation=alex_conv).exists()


def test_it_does_not_find_an_unknown_conversation(page):
    assert page.get("/conversations/00000000-0000-0000-0000-000000000000/").status_code == 404


def test_it_never_shows_a_memory_of_another_user_in_a_transcript(page, conv, say, alex, alex_conv):
    say("Hello.")
    assert MemoryRecord.objects.count() == 0
    r = page.get(f"/conversations/{conv.pk}/")
    assert "Remembered from this message" not in text(r)
