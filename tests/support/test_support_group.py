"""Issue 6: a "Support" group, created by a data migration, with view permissions, the explain
view and the support actions — and not view_private_text."""

import pytest
from django.contrib.auth.models import Group

from support.services import SUPPORT_GROUP_PERMISSIONS, support_group_ensure

pytestmark = pytest.mark.django_db


def permissions(group):
    return set(group.permissions.values_list("content_type__app_label", "codename"))


def test_the_migration_created_the_support_group_with_the_expected_permissions():
    group = Group.objects.get(name="Support")
    assert permissions(group) == set(SUPPORT_GROUP_PERMISSIONS)
    assert ("support", "view_private_text") not in permissions(group)
    assert {"forget_memory", "retract_memory", "normalise_memory", "revoke_rule", "use_explain"} <= {
        codename for _, codename in permissions(group)}
    # Views only: support staff change nothing by hand.
    assert not any(codename.startswith(("add_", "change_", "delete_")) for _, codename in permissions(group))


def test_ensuring_the_group_again_changes_nothing():
    before = permissions(Group.objects.get(name="Support"))
    support_group_ensure()
    assert permissions(Group.objects.get(name="Support")) == before
    assert Group.objects.filter(name="Support").count() == 1


def test_a_support_member_can_reach_the_admin_pages_they_need(support):
    for url in ["/admin/", "/admin/memory/memoryrecord/", "/admin/policy/policyrule/", "/admin/policy/decisionlog/",
                "/admin/conversations/message/", "/admin/support/explain/", "/admin/support/supportaction/"]:
        assert support.get(url).status_code == 200, url
    for url in ["/admin/config/apitoken/", "/admin/support/privatetextaccess/"]:
        assert support.get(url).status_code == 403, url
