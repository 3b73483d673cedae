"""`manage.py create_support_user`: a staff account in the Support group (not a superuser),
with `view_private_text` only when asked for; running it again updates the same account."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from support.reveals import PRIVATE_TEXT_PERMISSION
from support.services import SUPPORT_GROUP

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("create_support_user", *args, stdout=out)
    return out.getvalue()


def test_it_creates_support_staff_in_the_support_group(support_group):
    output = run("alex")
    alex = get_user_model().objects.get(username="alex")
    assert (alex.is_staff, alex.is_superuser) == (True, False)
    assert list(alex.groups.values_list("name", flat=True)) == [SUPPORT_GROUP]
    assert alex.has_perm("support.use_explain") and not alex.has_perm(PRIVATE_TEXT_PERMISSION)
    password = output.split("Password: ")[1].strip().strip("'")
    assert alex.check_password(password)


def test_it_grants_private_text_only_when_asked_and_updates_in_place(support_group):
    run("alex", "--password", "first password 1", "--private-text")
    alex = get_user_model().objects.get(username="alex")
    assert alex.has_perm(PRIVATE_TEXT_PERMISSION)
    output = run("alex", "--password", "second password 2")
    alex = get_user_model().objects.get(username="alex")
    assert not alex.has_perm(PRIVATE_TEXT_PERMISSION)
    assert "Password" not in output  # a given password is never printed
    assert get_user_model().objects.filter(username="alex").count() == 1
    assert alex.check_password("second password 2")
