"""`DELETE /users/{user}` (SPEC §9): the user and everything theirs goes; support notes are
erased and reveals kept without the user's name."""

import pytest

from conversations.models import Turn
from memory.models import MemoryRecord

pytestmark = pytest.mark.django_db


def test_it_deletes_a_user_and_everything_theirs(api, story):
    assert api.delete("/api/v1/users/wren").status_code == 204
    assert api.get("/api/v1/users/wren/export").status_code == 404
    assert api.delete("/api/v1/users/wren").status_code == 404
    assert not Turn.objects.exists() and not MemoryRecord.objects.exists()


def test_it_erases_support_notes_and_keeps_the_reveals_of_a_deleted_user_pseudonymously(api, story):
    """§9: DELETE erases everything of the user, support's notes about them included; S2: the
    reveal log stays, with the user replaced by a one-way pseudonym."""
    from memory.models import MemoryRecord as Record
    from support.models import PrivateTextAccess, RevealGrant, SupportAction
    from support.reveals import reveal_open
    from support.services import support_retract
    from tests.factories import UserFactory

    staff = UserFactory(username="helper", is_staff=True, is_superuser=True)
    record = Record.objects.filter(user=story).exclude(status="forgotten").first()
    support_retract(staff=staff, record_ids=[record.pk], reason="asked by mail")
    reveal_open(staff=staff, user="wren", reason="Ticket 12: wren asked by mail")
    assert SupportAction.objects.filter(subject_id=story.pk).exists()
    assert PrivateTextAccess.objects.filter(subject_id=story.pk).exists()
    assert api.delete("/api/v1/users/wren").status_code == 204
    assert not SupportAction.objects.filter(subject_id=story.pk).exists()
    assert not PrivateTextAccess.objects.filter(subject_id=story.pk).exists()
    grant = RevealGrant.objects.get()
    assert grant.subject_id is None and grant.subject_pseudonym.startswith("deleted-user-")
    assert "wren" not in grant.reason
    assert PrivateTextAccess.objects.filter(subject_pseudonym=grant.subject_pseudonym).count() == 2
