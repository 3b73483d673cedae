"""The "Support" group (docs/DESIGN.md, privacy; SPEC §13): view permissions, the explain view
and the support actions — never `view_private_text` — written once in
`support.services.SUPPORT_GROUP_PERMISSIONS` and kept so after every `migrate`."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command

from support.services import SUPPORT_GROUP_PERMISSIONS, support_group_ensure

pytestmark = pytest.mark.django_db


def permissions(group):
    return set(group.permissions.values_list("content_type__app_label", "codename"))


def test_it_has_the_expected_permissions_after_migrate():
    group = Group.objects.get(name="Support")
    assert permissions(group) == set(SUPPORT_GROUP_PERMISSIONS)
    assert ("support", "view_private_text") not in permissions(group)
    assert {
        "forget_memory",
        "retract_memory",
        "normalise_memory",
        "revoke_rule",
        "use_explain",
    } <= {codename for _, codename in permissions(group)}
    # Views only: support staff change nothing by hand.
    assert not any(
        codename.startswith(("add_", "change_", "delete_")) for _, codename in permissions(group)
    )


def test_it_changes_nothing_when_ensured_again():
    before = permissions(Group.objects.get(name="Support"))
    support_group_ensure()
    assert permissions(Group.objects.get(name="Support")) == before
    assert Group.objects.filter(name="Support").count() == 1


def test_it_loses_a_permission_added_by_hand_and_regains_one_removed_on_migrate():
    group = Group.objects.get(name="Support")
    group.permissions.add(Permission.objects.get(codename="view_private_text"))
    group.permissions.remove(Permission.objects.get(codename="use_explain"))
    call_command("migrate", verbosity=0, interactive=False)
    assert permissions(Group.objects.get(name="Support")) == set(SUPPORT_GROUP_PERMISSIONS)


def test_it_lets_a_support_member_reach_the_admin_pages_they_need(support):
    for url in [
        "/admin/",
        "/admin/memory/memoryrecord/",
        "/admin/policy/policyrule/",
        "/admin/policy/decisionlog/",
        "/admin/conversations/message/",
        "/admin/support/explain/",
        "/admin/support/supportaction/",
    ]:
        assert support.get(url).status_code == 200, url
    for url in ["/admin/config/apitoken/", "/admin/support/privatetextaccess/"]:
        assert support.get(url).status_code == 403, url
