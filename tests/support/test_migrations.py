"""The support logs moved from `config` to the `support` app (their own home, DESIGN layout):
the migrations keep every logged row and every permission granted on them."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("config", "0003_support_group"), ("support", None)]


def migrate(targets):
    """Migrate the test database to `targets`; the historical models of the config app there."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state([("config", "0003_support_group")]).apps


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_logged_rows_and_the_grants_when_the_logs_move_to_the_support_app():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        old = migrate(BEFORE)
        ContentType = old.get_model("contenttypes", "ContentType")
        OldPermission = old.get_model("auth", "Permission")
        OldAction = old.get_model("config", "SupportAction")
        action_type = ContentType.objects.get(app_label="config", model="supportaction")
        granted = OldPermission.objects.get(content_type=action_type, codename="forget_memory")
        staff = old.get_model("auth", "User").objects.create(username="agent", is_staff=True)
        staff.user_permissions.add(granted)
        OldAction.objects.create(
            staff_id=staff.pk,
            staff_username="agent",
            subject_id=None,
            action="normalise",
            content_type=action_type,
            object_id="7",
            reason="ticket 12",
            outcome="done",
            detail={},
            acted_at="2026-08-05T12:00:00Z",
        )
    finally:
        migrate(latest)

    from support.models import SupportAction

    logged = SupportAction.objects.get()
    assert (logged.reason, logged.object_id, logged.outcome) == ("ticket 12", "7", "done")
    assert SupportAction._meta.db_table == "support_supportaction"
    staff = get_user_model().objects.get(username="agent")
    assert staff.has_perm("support.forget_memory")
    assert not Permission.objects.filter(
        content_type__app_label="config", codename="forget_memory"
    ).exists()
