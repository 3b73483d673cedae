"""Support staff and their group: the "Support" group with exactly its permissions, written
after every `migrate`, and the staff accounts `create_support_user` makes (`view_private_text`
only when asked for, S1)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Q

from ..reveals import PRIVATE_TEXT_PERMISSION

SUPPORT_GROUP = "Support"
# What the "Support" group holds (support/migrations/0002_support_group.py seeded the same list;
# a test keeps them in step). View permissions for answering tickets, the explain view and the
# four actions; not `view_private_text`, which is granted person by person.
SUPPORT_GROUP_PERMISSIONS = (
    ("auth", "view_user"),
    ("memory", "view_memoryrecord"),
    ("memory", "view_memoryprofile"),
    ("memory", "view_keydefinition"),
    ("memory", "view_tombstone"),
    ("memory", "view_slotretraction"),
    ("memory", "view_idempotencyrecord"),
    ("policy", "view_policyrule"),
    ("policy", "view_capability"),
    ("policy", "view_userpolicyversion"),
    ("policy", "view_defaultspolicyversion"),
    ("policy", "view_decisionlog"),
    ("policy", "view_policyanswer"),
    ("policy", "view_mediajob"),
    ("conversations", "view_character"),
    ("conversations", "view_conversation"),
    ("conversations", "view_turn"),
    ("conversations", "view_message"),
    ("support", "view_supportaction"),
    ("support", "use_explain"),
    ("support", "forget_memory"),
    ("support", "retract_memory"),
    ("support", "normalise_memory"),
    ("support", "revoke_rule"),
    ("agents", "view_connection"),  # a person's connected assistants (SPEC §15 M1)
    ("agents", "revoke_connection"),
)


# ---------------------------------------------------------------------------------------------
# The Support group


def support_staff_put(*, username: str, password: str, private_text: bool = False):
    """A support staff member: a staff account (not a superuser) in the Support group, with
    `view_private_text` only when asked for. Creates the account or updates its password,
    group and that permission."""
    User = get_user_model()
    with transaction.atomic():
        user, _ = User.objects.get_or_create(username=username)
        user.is_staff, user.is_active = True, True
        user.set_password(password)
        user.save()
        user.groups.add(support_group_ensure())
        app_label, codename = PRIVATE_TEXT_PERMISSION.split(".")
        permission = Permission.objects.get(content_type__app_label=app_label, codename=codename)
        if private_text:
            user.user_permissions.add(permission)
        else:
            user.user_permissions.remove(permission)
    return user


def support_group_ensure():
    """The "Support" group with exactly `SUPPORT_GROUP_PERMISSIONS` — the one place the
    group's permissions are written. Runs after every `migrate` (`support.apps`, post_migrate),
    so a new deployment, an upgraded one and a flushed test database all end with the same
    group; a permission added by hand is taken away again. Idempotent."""
    wanted = Q(pk__in=[])
    for app_label, codename in SUPPORT_GROUP_PERMISSIONS:
        wanted |= Q(content_type__app_label=app_label, codename=codename)
    permissions = list(Permission.objects.filter(wanted))
    if len(permissions) != len(SUPPORT_GROUP_PERMISSIONS):
        raise LookupError("Some support permissions do not exist yet; run migrate first.")
    with transaction.atomic():
        group, _ = Group.objects.get_or_create(name=SUPPORT_GROUP)
        group.permissions.set(permissions)
    return group
