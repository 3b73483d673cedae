"""Issue 6: private text (memory values, message content, conversation titles) is masked on
every admin page for staff without `view_private_text`, cannot be searched, filtered or sorted
by them, and each reveal to staff who have the permission is logged."""

import pytest
from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.urls import reverse

from conversations.models import Conversation
from memory.models import MemoryRecord
from support.models import PrivateTextAccess
from tests.support.conftest import (
    FORGOTTEN,
    LIKE,
    REPLY,
    TITLE,
    VALUE,
    assert_no_private_text,
    staff_client,
)

pytestmark = pytest.mark.django_db

APPS = {"memory", "policy", "conversations", "config", "support", "auth"}


def admin_pages():
    """Every changelist, and the change and history page of every object, of our apps."""
    for model in admin.site._registry:
        opts = model._meta
        if opts.app_label not in APPS:
            continue
        yield reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        for pk in model.objects.values_list("pk", flat=True)[:25]:
            yield reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[pk])
            yield reverse(f"admin:{opts.app_label}_{opts.model_name}_history", args=[pk])


def reveals(user, model=None):
    qs = PrivateTextAccess.objects.filter(staff_id=user.pk)
    if model is not None:
        qs = qs.filter(content_type=ContentType.objects.get_for_model(model))
    return qs


def test_it_shows_no_private_text_on_any_page_without_the_permission(world, viewer):
    client = staff_client(viewer)
    pages = list(admin_pages())
    assert len(pages) > 40
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert_no_private_text(response.content.decode(), url)
    assert not reveals(viewer).exists()


def test_it_shows_no_private_text_to_the_support_group(world, support, support_user):
    for url in [
        "/admin/",
        "/admin/memory/memoryrecord/",
        f"/admin/memory/memoryrecord/{world.plant.pk}/change/",
        f"/admin/memory/memoryrecord/{world.like.pk}/change/",
        "/admin/conversations/conversation/",
        f"/admin/conversations/conversation/{world.conversation.pk}/change/",
        f"/admin/conversations/conversation/{world.conversation.pk}/history/",
        "/admin/conversations/message/",
        f"/admin/conversations/message/{world.turn.user_message_id}/change/",
        f"/admin/conversations/turn/{world.turn.pk}/change/",
    ]:
        response = support.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert_no_private_text(html, url)
    assert "hidden" in support.get(f"/admin/memory/memoryrecord/{world.plant.pk}/change/").content.decode()
    assert not reveals(support_user).exists()


@pytest.mark.parametrize("url, term", [
    ("/admin/memory/memoryrecord/", "Marlowe"),
    ("/admin/conversations/message/", "basil"),
    ("/admin/conversations/message/", "Lovely-reply"),
    ("/admin/conversations/conversation/", "Greenhouse"),
])
def test_searching_by_private_text_finds_nothing_without_the_permission(world, support, url, term):
    response = support.get(url, {"q": term})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 0  # search is no oracle
    assert_no_private_text(response.content.decode(), url)


def test_searching_by_private_text_works_with_the_permission(world, privileged):
    response = privileged.get("/admin/memory/memoryrecord/", {"q": "Marlowe"})
    assert [r.pk for r in response.context["cl"].result_list] == [world.plant.pk]


def test_search_by_user_and_key_works_for_everyone(world, support):
    response = support.get("/admin/memory/memoryrecord/", {"q": "sam basil"})
    assert [r.pk for r in response.context["cl"].result_list] == [world.plant.pk]
    response = support.get("/admin/memory/memoryrecord/", {"q": str(world.plant.pk)})
    assert [r.pk for r in response.context["cl"].result_list] == [world.plant.pk]


@pytest.mark.parametrize("url, lookup", [
    ("/admin/memory/memoryrecord/", "value__startswith"),
    ("/admin/memory/memoryrecord/", "value"),
    ("/admin/conversations/message/", "content__icontains"),
    ("/admin/conversations/conversation/", "title__startswith"),
    ("/admin/conversations/message/", "conversation__title__startswith"),
    ("/admin/conversations/turn/", "user_message__content__startswith"),
])
def test_filtering_by_private_text_is_refused_without_the_permission(world, support, url, lookup):
    response = support.get(url, {lookup: "M"})
    assert response.status_code == 400


def test_a_memory_value_shows_with_the_permission_and_the_reveal_is_logged(world, privileged, privileged_user):
    response = privileged.get(f"/admin/memory/memoryrecord/{world.plant.pk}/change/")
    assert response.status_code == 200
    assert VALUE in response.content.decode()
    [reveal] = reveals(privileged_user, MemoryRecord)
    assert (reveal.object_id, reveal.view, reveal.subject_id, reveal.staff_username) == (
        str(world.plant.pk), "change", world.sam.pk, "support-priya")
    assert reveal.accessed_at is not None


def test_a_forgotten_value_is_gone_even_with_the_permission(world, privileged, privileged_user):
    response = privileged.get(f"/admin/memory/memoryrecord/{world.forgotten.pk}/change/")
    html = response.content.decode()
    assert FORGOTTEN not in html and "erased" in html
    assert not reveals(privileged_user).exists()  # nothing private was shown
    assert FORGOTTEN not in privileged.get("/admin/memory/memoryrecord/").content.decode()


def test_message_content_and_titles_show_with_the_permission_and_are_logged(world, privileged, privileged_user):
    reply = world.reply
    html = privileged.get(f"/admin/conversations/message/{reply.pk}/change/").content.decode()
    assert REPLY in html
    html = privileged.get(f"/admin/conversations/conversation/{world.conversation.pk}/change/").content.decode()
    assert TITLE in html
    # The page names the conversation by id, never by title (tab title, heading, breadcrumbs).
    assert f"<title>{TITLE}" not in html
    assert {(r.object_id, r.view) for r in reveals(privileged_user)} == {
        (str(reply.pk), "change"), (str(world.conversation.pk), "change")}


def test_a_changelist_with_the_permission_logs_every_row_it_reveals(world, privileged, privileged_user):
    html = privileged.get("/admin/memory/memoryrecord/").content.decode()
    assert VALUE in html and LIKE in html
    shown = set(MemoryRecord.objects.filter(user=world.sam).exclude(value="").values_list("pk", flat=True))
    logged = {r.object_id for r in reveals(privileged_user, MemoryRecord).filter(view="changelist")}
    assert logged == {str(pk) for pk in shown}


def test_the_explain_view_hides_values_without_the_permission(world, support, support_user):
    url = "/admin/support/explain/"
    response = support.get(url, {"user": "sam", "conversation": str(world.conversation.pk), "scene": "greenhouse"})
    assert response.status_code == 200
    html = response.content.decode()
    assert_no_private_text(html, url)
    assert str(world.plant.pk) in html  # ids and reasons are shown
    assert not reveals(support_user).exists()


def test_the_explain_view_shows_values_with_the_permission_and_logs_them(world, privileged, privileged_user):
    response = privileged.get("/admin/support/explain/", {"user": "sam"})
    html = response.content.decode()
    assert VALUE in html and LIKE in html and FORGOTTEN not in html
    logged = {r.object_id for r in reveals(privileged_user, MemoryRecord).filter(view="explain")}
    assert str(world.plant.pk) in logged and str(world.forgotten.pk) not in logged


def test_an_action_confirmation_page_masks_values(world, support, privileged, privileged_user):
    data = {"action": "forget_on_behalf", "_selected_action": [str(world.plant.pk)]}
    response = support.post("/admin/memory/memoryrecord/", data)
    assert response.status_code == 200 and "Reason" in response.content.decode()
    assert_no_private_text(response.content.decode(), "forget confirmation")
    response = privileged.post("/admin/memory/memoryrecord/", data)
    assert VALUE in response.content.decode()
    assert reveals(privileged_user).filter(view="action", object_id=str(world.plant.pk)).exists()


def test_the_access_log_is_read_only(world, privileged, superuser):
    privileged.get(f"/admin/memory/memoryrecord/{world.plant.pk}/change/")
    reveal = PrivateTextAccess.objects.get()
    root = staff_client(superuser)
    assert root.get("/admin/support/privatetextaccess/").status_code == 200
    assert root.get("/admin/support/privatetextaccess/add/").status_code == 403
    response = root.post(f"/admin/support/privatetextaccess/{reveal.pk}/change/", {"view": "explain"})
    assert response.status_code == 403
    assert root.post(f"/admin/support/privatetextaccess/{reveal.pk}/delete/", {"post": "yes"}).status_code == 403
    assert PrivateTextAccess.objects.get().view == "change"
    # Support staff cannot read who looked at what.
    assert privileged.get("/admin/support/privatetextaccess/").status_code == 403


@pytest.mark.parametrize("path", [
    "memory/memoryrecord", "memory/tombstone", "memory/slotretraction", "memory/idempotencyrecord",
    "policy/policyrule", "policy/decisionlog", "policy/mediajob", "policy/policyanswer",
    "conversations/conversation", "conversations/turn", "conversations/message",
])
def test_rows_the_services_own_cannot_be_added_changed_or_deleted(world, superuser, path):
    root = staff_client(superuser)
    app_label, model_name = path.split("/")
    model = next(m for m in admin.site._registry if (m._meta.app_label, m._meta.model_name) == (app_label, model_name))
    pk = model.objects.values_list("pk", flat=True).first()
    assert root.get(f"/admin/{path}/add/").status_code == 403
    assert root.post(f"/admin/{path}/{pk}/change/", {}).status_code == 403
    assert root.post(f"/admin/{path}/{pk}/delete/", {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=pk).exists()


def test_conversation_titles_never_name_a_conversation_elsewhere(world, privileged):
    # Pages that refer to a conversation (a memory's scope, a message, a rule) use its id.
    for url in [
        f"/admin/memory/memoryrecord/{world.forgotten.pk}/change/",
        f"/admin/policy/policyrule/{world.rule.pk}/change/",
        "/admin/policy/policyrule/",
        "/admin/conversations/turn/",
    ]:
        html = privileged.get(url).content.decode()
        assert TITLE not in html, url
        assert str(world.conversation.pk) in html, url
    assert Conversation.objects.get().title == TITLE
