"""SPEC I8: support sees each user's memory switches, who changed them last and when — and
never the profile's secret, and cannot change them by hand."""

import pytest

from memory.models import MemoryProfile
from memory.services import memory_settings_set
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_it_shows_support_the_switches_and_who_changed_them(support):
    user = UserFactory(username="quiet-user")
    memory_settings_set(user=user, changed_by="user", use=False)
    profile = MemoryProfile.objects.get(user=user)
    listing = support.get("/admin/memory/memoryprofile/")
    assert listing.status_code == 200
    html = listing.content.decode()
    assert "quiet-user" in html and "user" in html
    detail = support.get(f"/admin/memory/memoryprofile/{profile.pk}/change/").content.decode()
    assert "quiet-user" in detail
    assert profile.secret not in html and profile.secret not in detail


def test_it_refuses_support_a_change_of_the_switches_by_hand(support):
    user = UserFactory(username="quiet-user")
    memory_settings_set(user=user, changed_by="api", learn=False)
    profile = MemoryProfile.objects.get(user=user)
    r = support.post(
        f"/admin/memory/memoryprofile/{profile.pk}/change/", {"learn": "on", "use": "on"}
    )
    assert r.status_code == 403
    profile.refresh_from_db()
    assert profile.learn is False and profile.settings_changed_by == "api"
