"""SPEC §13 S1: private text (memory values, message content, conversation titles, a key's free
part) is masked on every admin page unless the staff member has an open reveal of its user —
the `view_private_text` permission alone shows nothing — and it cannot be searched, filtered or
sorted on outside a reveal. Inside a reveal, that user's text shows; everyone else's stays
masked."""

import uuid

import pytest
from django.contrib import admin
from django.urls import reverse

from conversations.models import Conversation
from support.models import PrivateTextAccess
from tests.support.conftest import (
    ALEX_STRINGS,
    ALEX_VALUE,
    FORGOTTEN,
    LIKE,
    NAME,
    PERSON_VALUE,
    PRIVATE_STRINGS,
    REPLY,
    TITLE,
    VALUE,
    assert_no_private_text,
    assert_no_text_of,
    open_reveal,
    staff_client,
)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

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


def page_rows(user):
    return PrivateTextAccess.objects.filter(staff_id=user.pk, event="page")


@pytest.mark.parametrize("who", ["viewer", "viewer with the permission", "superuser"])
def test_it_shows_no_private_text_on_any_page_without_a_reveal(world, person_memory, who, request):
    """S1: without an open reveal nothing shows — permission or not, superuser or not."""
    from django.contrib.auth.models import Permission

    staff = request.getfixturevalue(who.split()[0])
    if who.endswith("permission"):
        staff.user_permissions.add(Permission.objects.get(codename="view_private_text"))
    client = staff_client(staff)
    pages = list(admin_pages())
    assert len(pages) > 40
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert_no_private_text(html, url)
        assert_no_text_of(html, (NAME, PERSON_VALUE), url)
    assert not PrivateTextAccess.objects.filter(staff_id=staff.pk).exists()


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
        assert "Reveal this user" not in html and "Reveal…" not in html  # they cannot open one
    assert (
        "hidden"
        in support.get(f"/admin/memory/memoryrecord/{world.plant.pk}/change/").content.decode()
    )
    assert not PrivateTextAccess.objects.filter(staff_id=support_user.pk).exists()


def test_it_offers_a_reveal_from_a_masked_value_to_staff_who_may_open_one(world, privileged):
    html = privileged.get("/admin/memory/memoryrecord/").content.decode()
    assert VALUE not in html
    assert "/admin/support/reveal/?user=sam&amp;next=%2Fadmin%2Fmemory%2Fmemoryrecord%2F" in html
    html = privileged.get(f"/admin/memory/memoryrecord/{world.plant.pk}/change/").content.decode()
    assert (
        "Reveal this user&#x27;s private text…" in html
        or "Reveal this user's private text…" in html
    )


@pytest.mark.parametrize(
    "url, term",
    [
        ("/admin/memory/memoryrecord/", "Marlowe"),
        ("/admin/conversations/message/", "basil"),
        ("/admin/conversations/message/", "Lovely-reply"),
        ("/admin/conversations/conversation/", "Greenhouse"),
        ("/admin/memory/memoryrecord/", NAME),
    ],
)
@pytest.mark.parametrize("who", ["support_user", "privileged_user"])
def test_it_finds_nothing_by_private_text_without_a_reveal(
    world, person_memory, url, term, who, request
):
    client = staff_client(request.getfixturevalue(who))
    response = client.get(url, {"q": term})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 0  # search is no oracle
    assert_no_private_text(response.content.decode(), url)


def test_it_searches_by_private_text_inside_a_reveal_for_its_user_only(
    world, alex, privileged, privileged_user
):
    open_reveal(privileged_user, "sam")
    response = privileged.get("/admin/memory/memoryrecord/", {"q": "Marlowe"})
    assert [r.pk for r in response.context["cl"].result_list] == [world.plant.pk]
    # Alex's value is not searchable inside a reveal of sam.
    assert (
        privileged.get("/admin/memory/memoryrecord/", {"q": "Quillon"}).context["cl"].result_count
        == 0
    )
    assert (
        privileged.get("/admin/conversations/message/", {"q": "lamp"}).context["cl"].result_count
        == 0
    )
    assert (
        privileged.get("/admin/conversations/message/", {"q": "basil"}).context["cl"].result_count
        == 1
    )


def test_it_searches_a_keys_free_part_only_inside_a_reveal_of_its_user(
    world, person_memory, alex, privileged, privileged_user
):
    url = "/admin/memory/memoryrecord/"
    # The key without its free part is searchable by everyone.
    assert [r.pk for r in privileged.get(url, {"q": "works_at"}).context["cl"].result_list] == [
        person_memory.pk
    ]
    assert privileged.get(url, {"q": NAME}).context["cl"].result_count == 0
    open_reveal(privileged_user, "alex")
    assert privileged.get(url, {"q": NAME}).context["cl"].result_count == 0  # not alex's key
    open_reveal(privileged_user, "sam")
    assert [r.pk for r in privileged.get(url, {"q": NAME}).context["cl"].result_list] == [
        person_memory.pk
    ]


def test_it_searches_by_user_and_key_for_everyone(world, support):
    response = support.get("/admin/memory/memoryrecord/", {"q": "sam basil"})
    assert [r.pk for r in response.context["cl"].result_list] == [world.plant.pk]
    response = support.get("/admin/memory/memoryrecord/", {"q": str(world.plant.pk)})
    assert [r.pk for r in response.context["cl"].result_list] == [world.plant.pk]


@pytest.mark.parametrize(
    "url, lookup",
    [
        ("/admin/memory/memoryrecord/", "value__startswith"),
        ("/admin/memory/memoryrecord/", "value"),
        ("/admin/memory/memoryrecord/", "key__startswith"),
        ("/admin/memory/tombstone/", "key"),
        ("/admin/conversations/message/", "content__icontains"),
        ("/admin/conversations/conversation/", "title__startswith"),
        ("/admin/conversations/message/", "conversation__title__startswith"),
        ("/admin/conversations/turn/", "user_message__content__startswith"),
    ],
)
@pytest.mark.parametrize("who", ["support_user", "privileged_user"])
def test_it_refuses_filtering_by_private_text_without_a_reveal(world, url, lookup, who, request):
    client = staff_client(request.getfixturevalue(who))
    assert client.get(url, {lookup: "M"}).status_code == 400


def test_it_keeps_filtering_by_private_text_inside_a_reveal_to_its_user(
    world, alex, privileged, privileged_user
):
    open_reveal(privileged_user, "sam")
    # Both users have a memory value and a message starting with these letters.
    response = privileged.get("/admin/memory/memoryrecord/", {"value__icontains": "secret-xyz"})
    assert response.status_code == 200
    users = {r.user_id for r in response.context["cl"].result_list}
    assert users == {world.sam.pk}
    response = privileged.get("/admin/conversations/message/", {"content__icontains": "i"})
    assert {r.user_id for r in response.context["cl"].result_list} == {world.sam.pk}
    assert_no_text_of(response.content.decode(), ALEX_STRINGS, "filtered messages")


def column(response, pks) -> list:
    """The order in which `pks` appear on a changelist page."""
    order = [r.pk for r in response.context["cl"].result_list]
    return [pk for pk in order if pk in pks]


def test_it_sorts_by_value_or_key_by_private_text_only_inside_a_reveal(
    world, privileged, privileged_user
):
    from memory.domain import Scope
    from memory.models import MemoryRecord
    from memory.services import memory_assert

    made = [
        uuid.UUID(
            str(memory_assert(user=world.sam, key=key, value=value, scope=Scope("user")).record.id)
        )
        for key, value in [
            ("people.abe.lives_in", "zzz-last"),
            ("people.zed.lives_in", "aaa-first"),
        ]
    ]
    pks = set(made)
    list_display = list(admin.site._registry[MemoryRecord].list_display)
    key_col, value_col = list_display.index("key_ref") + 1, list_display.index("value_preview") + 1
    url = "/admin/memory/memoryrecord/"

    def orders(col):
        return column(privileged.get(url, {"o": f"{col}"}), pks), column(
            privileged.get(url, {"o": f"-{col}"}), pks
        )

    for col in (key_col, value_col):  # masked: a tie, so ascending and descending agree
        ascending, descending = orders(col)
        assert ascending == descending
    open_reveal(privileged_user, "sam")
    assert orders(key_col) == (made, made[::-1])  # abe before zed
    assert orders(value_col) == (made[::-1], made)  # aaa before zzz


@pytest.mark.parametrize("page", ["change", "changelist"])
def test_it_shows_the_users_text_inside_a_reveal_and_masks_everyone_elses(
    world, alex, person_memory, privileged, privileged_user, page
):
    open_reveal(privileged_user, "sam")
    urls = {
        "change": [
            f"/admin/memory/memoryrecord/{world.plant.pk}/change/",
            f"/admin/memory/memoryrecord/{person_memory.pk}/change/",
            f"/admin/conversations/message/{world.reply.pk}/change/",
            f"/admin/conversations/conversation/{world.conversation.pk}/change/",
        ],
        "changelist": [
            "/admin/memory/memoryrecord/",
            "/admin/conversations/message/",
            "/admin/conversations/conversation/",
            "/admin/memory/tombstone/",
        ],
    }[page]
    html = "".join(privileged.get(url).content.decode() for url in urls)
    for secret in (VALUE, REPLY, TITLE, NAME, PERSON_VALUE):
        assert secret in html, secret
    assert_no_text_of(html, ALEX_STRINGS, "pages inside a reveal of sam")
    # Alex's own pages stay masked.
    html = privileged.get(f"/admin/memory/memoryrecord/{alex.record.pk}/change/").content.decode()
    assert ALEX_VALUE not in html and "private-masked" in html


def test_it_logs_each_page_shown_under_a_reveal_once(
    world, person_memory, privileged, privileged_user
):
    grant = open_reveal(privileged_user, "sam")
    privileged.get("/admin/memory/memoryrecord/")
    privileged.get(f"/admin/memory/memoryrecord/{world.plant.pk}/change/")
    privileged.get(f"/admin/conversations/message/{world.reply.pk}/change/")
    rows = list(page_rows(privileged_user).order_by("id"))
    assert [(r.view, r.content_type.model) for r in rows] == [
        ("changelist", "memoryrecord"),
        ("change", "memoryrecord"),
        ("change", "message"),
    ]
    shown = sam_records_with_private_text(world)
    assert rows[0].shown == shown and rows[0].object_id == ""
    assert rows[1].object_id == str(world.plant.pk) and rows[1].shown == 1
    for row in rows:
        assert (row.grant_id, row.subject_id, row.staff_username) == (
            grant.pk,
            world.sam.pk,
            "support-priya",
        )
        assert row.grant.reason == grant.reason and row.accessed_at is not None


def sam_records_with_private_text(world) -> int:
    from memory.models import MemoryRecord
    from support.display import has_free_part

    return sum(
        1 for r in MemoryRecord.objects.filter(user=world.sam) if r.value or has_free_part(r.key)
    )


def test_it_shows_no_forgotten_value_even_inside_a_reveal(world, privileged, privileged_user):
    open_reveal(privileged_user, "sam")
    response = privileged.get(f"/admin/memory/memoryrecord/{world.forgotten.pk}/change/")
    html = response.content.decode()
    assert FORGOTTEN not in html and "erased" in html
    assert not page_rows(privileged_user).exists()  # nothing private was shown
    assert FORGOTTEN not in privileged.get("/admin/memory/memoryrecord/").content.decode()


def test_it_never_names_a_conversation_by_its_title_elsewhere(world, privileged, privileged_user):
    open_reveal(privileged_user, "sam")
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
    html = privileged.get(
        f"/admin/conversations/conversation/{world.conversation.pk}/change/"
    ).content.decode()
    assert TITLE in html and f"<title>{TITLE}" not in html  # shown, but never as the page's name
    assert Conversation.objects.get().title == TITLE


def test_it_hides_values_and_names_in_the_explain_view_without_a_reveal(
    world, person_memory, support, privileged, support_user, privileged_user
):
    url = "/admin/support/explain/"
    for client in (support, privileged):
        response = client.get(
            url, {"user": "sam", "conversation": str(world.conversation.pk), "scene": "greenhouse"}
        )
        assert response.status_code == 200
        html = response.content.decode()
        assert_no_private_text(html, url)
        assert_no_text_of(html, (NAME, PERSON_VALUE), url)
        assert (
            str(world.plant.pk) in html and "people.*.works_at" in html
        )  # ids, keys and reasons show
    assert not PrivateTextAccess.objects.filter(
        staff_id__in=[support_user.pk, privileged_user.pk]
    ).exists()


def test_it_shows_the_users_text_in_the_explain_view_inside_a_reveal_and_logs_it(
    world, person_memory, alex, privileged, privileged_user
):
    open_reveal(privileged_user, "sam")
    html = privileged.get("/admin/support/explain/", {"user": "sam"}).content.decode()
    assert VALUE in html and LIKE in html and PERSON_VALUE in html and FORGOTTEN not in html
    assert "Where Zebrina works" in html
    [row] = page_rows(privileged_user)
    assert row.view == "explain" and row.shown >= 3
    html = privileged.get("/admin/support/explain/", {"user": "alex"}).content.decode()
    assert ALEX_VALUE not in html  # another user: masked, not logged
    assert page_rows(privileged_user).count() == 1


def test_it_masks_values_on_an_action_confirmation_page_outside_a_reveal(
    world, person_memory, support, privileged, privileged_user
):
    data = {
        "action": "forget_on_behalf",
        "_selected_action": [str(world.plant.pk), str(person_memory.pk)],
    }
    for client in (support, privileged):
        response = client.post("/admin/memory/memoryrecord/", data)
        assert response.status_code == 200 and "Reason" in response.content.decode()
        assert_no_private_text(response.content.decode(), "forget confirmation")
        assert_no_text_of(response.content.decode(), (NAME,), "forget confirmation")
    open_reveal(privileged_user, "sam")
    html = privileged.post("/admin/memory/memoryrecord/", data).content.decode()
    assert VALUE in html and NAME in html
    [row] = page_rows(privileged_user)
    assert (row.view, row.shown) == ("action", 2)


def test_it_never_shows_a_keys_free_part_in_a_support_actions_detail(
    world, person_memory, superuser
):
    from support.models import SupportAction
    from support.services import support_forget

    support_forget(
        staff=superuser, record_ids=[person_memory.pk], reason="Ticket 9: forget this person"
    )
    action = SupportAction.objects.get(object_id=str(person_memory.pk))
    html = (
        staff_client(superuser)
        .get(f"/admin/support/supportaction/{action.pk}/change/")
        .content.decode()
    )
    assert "people.*.works_at" in html and NAME not in html


@pytest.mark.parametrize(
    "path",
    [
        "memory/memoryrecord",
        "memory/tombstone",
        "memory/slotretraction",
        "memory/idempotencyrecord",
        "policy/policyrule",
        "policy/decisionlog",
        "policy/mediajob",
        "policy/policyanswer",
        "conversations/conversation",
        "conversations/turn",
        "conversations/message",
    ],
)
def test_it_lets_no_row_the_services_own_be_added_changed_or_deleted(world, superuser, path):
    root = staff_client(superuser)
    app_label, model_name = path.split("/")
    model = next(
        m
        for m in admin.site._registry
        if (m._meta.app_label, m._meta.model_name) == (app_label, model_name)
    )
    pk = model.objects.values_list("pk", flat=True).first()
    assert root.get(f"/admin/{path}/add/").status_code == 403
    assert root.post(f"/admin/{path}/{pk}/change/", {}).status_code == 403
    assert root.post(f"/admin/{path}/{pk}/delete/", {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=pk).exists()


def test_it_looks_for_strings_that_are_really_in_the_database(world, person_memory):
    """The checks above would pass on an empty world: the strings they look for exist."""
    from conversations.models import Message
    from memory.models import MemoryRecord

    assert set(MemoryRecord.objects.values_list("value", flat=True)) >= {VALUE, LIKE, PERSON_VALUE}
    assert (
        Message.objects.filter(content=REPLY).exists()
        and Conversation.objects.filter(title=TITLE).exists()
    )
    assert PRIVATE_STRINGS


def test_it_masks_a_name_inside_a_key_in_a_turns_plan_outside_a_reveal(
    world, person_memory, privileged, privileged_user
):
    from turns.creation import turn_create
    from turns.plans import turn_prompt_plan

    turn = turn_create(
        conversation_id=world.conversation.pk, turn_key="t-person", content="hi"
    ).turn
    turn_prompt_plan(turn_id=turn.pk, budget=4000)
    url = f"/admin/conversations/turn/{turn.pk}/change/"
    html = privileged.get(url).content.decode()
    assert "people.*.works_at" in html and "Where Someone works" in html
    assert_no_text_of(html, (NAME, PERSON_VALUE), "a turn's plan")
    open_reveal(privileged_user, "sam")
    html = privileged.get(url).content.decode()
    assert "people.zebrina.works_at" in html and "Where Zebrina works" in html  # left out: no value
