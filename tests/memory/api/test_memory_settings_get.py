"""`GET /users/{user}/memory-settings` (SPEC §7, I8): the user's memory switches, both on by
default; an unknown user is a 404."""

import pytest

from tests.helpers import assert_problem
from tests.memory.api.calls import put_settings, settings_of

pytestmark = pytest.mark.django_db


def test_it_has_both_switches_on_by_default(api, sam):
    """I8: both settings are on by default; nothing has changed them yet."""
    r = settings_of(api)
    assert r.status_code == 200
    assert r.json() == {"learn": True, "use": True, "changed_at": None, "changed_by": None}


def test_it_reads_back_what_put_stored_with_who_and_when(api, sam):
    """§10: GET answers what the last PUT answered: {learn, use, changed_at, changed_by}."""
    changed = put_settings(api, {"use": False}).json()
    r = settings_of(api)
    assert r.status_code == 200
    assert r.json() == changed
    assert (r.json()["learn"], r.json()["use"], r.json()["changed_by"]) == (True, False, "api")


def test_it_answers_404_for_an_unknown_user(api, sam):
    assert_problem(settings_of(api, "nobody"), 404, "not_found")
