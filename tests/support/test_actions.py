"""Support actions go through the services (the resulting state obeys the SPEC), ask
for a reason on an intermediate page, and log it; without a reason nothing changes."""

import pytest

from conversations.selectors import load_context
from memory.models import MemoryRecord, SlotRetraction, Tombstone
from memory.selectors.resolution import ContextResolution
from policy.models import PolicyRule, UserPolicyVersion
from support.models import SupportAction
from tests.factories import UserFactory
from tests.support.conftest import VALUE, staff_client

pytestmark = pytest.mark.django_db

MEMORIES = "/admin/memory/memoryrecord/"
RULES = "/admin/policy/policyrule/"
REASON = "Ticket 4711: the user asked us to forget their plant's name."


def act(client, url, action, pks, **form):
    data = {"action": action, "_selected_action": [str(pk) for pk in pks]}
    if form:
        data.update({"_apply": "1", **form})
    return client.post(url, data)


def resolve(world, **context):
    ctx = load_context({"user": "sam", **context})
    return ContextResolution(ctx).resolution


def test_it_asks_for_a_reason_before_a_forget(world, support):
    response = act(support, MEMORIES, "forget_on_behalf", [world.plant.pk])
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="reason"' in html and 'name="everywhere"' in html
    assert MemoryRecord.objects.get(pk=world.plant.pk).status == "active"


@pytest.mark.parametrize("reason", ["", "   "])
def test_it_changes_nothing_on_a_forget_without_a_reason(world, support, reason):
    tombstones = Tombstone.objects.count()
    response = act(support, MEMORIES, "forget_on_behalf", [world.plant.pk], reason=reason)
    assert response.status_code == 200
    assert response.context["form"].errors["reason"]
    assert "errornote" in response.content.decode()
    plant = MemoryRecord.objects.get(pk=world.plant.pk)
    assert (plant.status, plant.value) == ("active", VALUE)
    assert Tombstone.objects.count() == tombstones
    assert not SupportAction.objects.exists()


def test_it_forgets_on_the_users_behalf_through_the_forget_service(world, support, support_user):
    response = act(support, MEMORIES, "forget_on_behalf", [world.plant.pk], reason=REASON)
    assert response.status_code == 302
    plant = MemoryRecord.objects.get(pk=world.plant.pk)
    # F2: a skeleton, value erased, status forgotten since the forget.
    assert (plant.status, plant.value) == ("forgotten", "")
    tombstone = Tombstone.objects.get(user=world.sam, key="basil_plant.name")
    assert tombstone.scope_id == "user:sam" and tombstone.value_hash is None
    assert plant.status_since == tombstone.forgotten_at
    # F5: the resolver excludes it, for the reason the pages show.
    resolution = resolve(world)
    assert plant.pk not in {r.id for r in resolution.active}
    assert resolution.explain(str(plant.pk)).reason == "forgotten"
    # The reason is logged once, with who, what and the outcome.
    [logged] = SupportAction.objects.all()
    assert (
        logged.action,
        logged.reason,
        logged.staff_id,
        logged.subject_id,
        logged.object_id,
        logged.outcome,
    ) == ("forget", REASON, support_user.pk, world.sam.pk, str(plant.pk), "done")
    assert logged.detail["tombstone"] == str(tombstone.pk)
    assert logged.detail["records"] == [str(plant.pk)]
    assert VALUE not in str(logged.detail)


def test_it_forgets_everywhere_and_one_value_of_a_many_key(world, support):
    act(support, MEMORIES, "forget_on_behalf", [world.like.pk], reason=REASON)
    tombstone = Tombstone.objects.get(user=world.sam, key="user.likes")
    assert tombstone.value_hash is not None  # F1: a value-level forget keeps a keyed hash only
    act(support, MEMORIES, "forget_on_behalf", [world.plant.pk], reason=REASON, everywhere="on")
    assert Tombstone.objects.get(user=world.sam, key="basil_plant.name").scope_id == "*"


def test_it_skips_and_logs_forgetting_a_forgotten_memory(world, support):
    response = act(support, MEMORIES, "forget_on_behalf", [world.forgotten.pk], reason=REASON)
    assert response.status_code == 302
    assert SupportAction.objects.get().outcome == "conflict"
    assert Tombstone.objects.filter(user=world.sam, key="cat.name").count() == 1


def test_it_retracts_through_the_retract_service(world, support):
    response = act(
        support, MEMORIES, "retract", [world.plant.pk], reason="Ticket 12: the plant died."
    )
    assert response.status_code == 302
    plant = MemoryRecord.objects.get(pk=world.plant.pk)
    assert plant.retracted_at is not None and plant.valid_until == plant.retracted_at
    assert plant.value == VALUE  # W10 keeps history; nothing is erased
    assert SlotRetraction.objects.filter(user=world.sam, key="basil_plant.name").exists()
    assert resolve(world).explain(str(plant.pk)).reason == "expired"
    logged = SupportAction.objects.get()
    assert (logged.action, logged.reason, logged.outcome) == (
        "retract",
        "Ticket 12: the plant died.",
        "done",
    )
    assert logged.detail["closed"] == [str(plant.pk)]


def test_it_normalises_through_the_normalisation_service_idempotently(world, support):
    old = MemoryRecord.objects.get(user=world.sam, key="user.lives_in", version=1)
    assert old.status == "active"  # superseded by the correction, not yet marked
    before = {r.id: r.reason for r in resolve(world).explanations.values()}
    response = act(
        support, MEMORIES, "normalise_statuses", [old.pk], reason="Ticket 99: stale statuses."
    )
    assert response.status_code == 302
    old.refresh_from_db()
    assert old.status == "superseded" and old.status_since is not None
    assert {r.id: r.reason for r in resolve(world).explanations.values()} == before  # W12
    act(support, MEMORIES, "normalise_statuses", [old.pk], reason="Again, to be sure.")
    first, second = SupportAction.objects.order_by("acted_at", "id")
    assert (first.action, first.object_id, first.subject_id) == (
        "normalise",
        str(world.sam.pk),
        world.sam.pk,
    )
    assert first.detail["changed"] >= 1 and second.detail["changed"] == 0


def test_it_revokes_a_rule_through_the_revoke_service(world, support):
    version = UserPolicyVersion.objects.get(user=world.sam).version
    response = act(
        support,
        RULES,
        "revoke_rules",
        [world.rule.pk],
        reason="Ticket 7: user wants to be asked again.",
    )
    assert response.status_code == 302
    rule = PolicyRule.objects.get(pk=world.rule.pk)
    assert rule.revoked_at is not None
    assert UserPolicyVersion.objects.get(user=world.sam).version == version + 1  # D7
    logged = SupportAction.objects.get()
    assert (logged.action, logged.outcome, logged.subject_id) == (
        "revoke-rule",
        "done",
        world.sam.pk,
    )
    # A second revoke changes nothing and says so.
    act(support, RULES, "revoke_rules", [world.rule.pk], reason="Again.")
    assert SupportAction.objects.order_by("-acted_at", "-id").first().outcome == "already-revoked"
    assert UserPolicyVersion.objects.get(user=world.sam).version == version + 1


def test_it_warns_that_revoking_a_product_default_affects_everyone(world, support):
    html = act(support, RULES, "revoke_rules", [world.default_rule.pk]).content.decode()
    assert "every user" in html


def test_it_changes_nothing_on_a_revoke_without_a_reason(world, support):
    response = act(support, RULES, "revoke_rules", [world.rule.pk], reason="")
    assert response.status_code == 200 and response.context["form"].errors["reason"]
    assert PolicyRule.objects.get(pk=world.rule.pk).revoked_at is None
    assert not SupportAction.objects.exists()


def test_it_lets_no_staff_without_the_action_permissions_act(world):
    from django.contrib.auth.models import Permission

    watcher = UserFactory(username="watcher", is_staff=True)
    watcher.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_memoryrecord", "view_policyrule"])
    )
    client = staff_client(watcher)
    response = client.get(MEMORIES)
    assert "forget_on_behalf" not in response.content.decode()
    act(client, MEMORIES, "forget_on_behalf", [world.plant.pk], reason=REASON)
    act(client, RULES, "revoke_rules", [world.rule.pk], reason=REASON)
    assert MemoryRecord.objects.get(pk=world.plant.pk).status == "active"
    assert PolicyRule.objects.get(pk=world.rule.pk).revoked_at is None
    assert not SupportAction.objects.exists()


def test_it_keeps_the_support_action_log_read_only(world, support, superuser):
    act(support, MEMORIES, "retract", [world.plant.pk], reason=REASON)
    logged = SupportAction.objects.get()
    assert support.get("/admin/support/supportaction/").status_code == 200
    root = staff_client(superuser)
    assert root.get("/admin/support/supportaction/add/").status_code == 403
    assert (
        root.post(f"/admin/support/supportaction/{logged.pk}/change/", {"reason": "x"}).status_code
        == 403
    )
    assert (
        root.post(f"/admin/support/supportaction/{logged.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert SupportAction.objects.get().reason == REASON
