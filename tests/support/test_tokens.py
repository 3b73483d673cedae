"""Runtime tokens revoked in the admin through `support.services.api_tokens_revoke`
(docs/DESIGN.md, habit 2: the admin's action calls the service): refused at once by the
revoking process, an already revoked token left as it was."""

from __future__ import annotations

import pytest

from config import credentials
from config.models import ApiToken
from support.services import api_tokens_revoke
from tests.support.conftest import staff_client

pytestmark = pytest.mark.django_db


def test_it_revokes_the_selected_tokens_from_the_admin(superuser):
    ApiToken.issue("kept")
    revoked, raw = ApiToken.issue("revoked")
    assert credentials.authenticate(raw) is not None  # remembered by this process

    r = staff_client(superuser).post(
        "/admin/config/apitoken/", {"action": "revoke", "_selected_action": [revoked.pk]}
    )

    assert r.status_code == 302
    assert credentials.authenticate(raw) is None
    assert set(
        ApiToken.objects.filter(revoked_at__isnull=False).values_list("name", flat=True)
    ) == {"revoked"}


def test_it_counts_only_the_tokens_it_revoked():
    first, _ = ApiToken.issue("first")
    ApiToken.issue("second")
    assert api_tokens_revoke(tokens=ApiToken.objects.filter(pk=first.pk)) == 1
    at = ApiToken.objects.get(pk=first.pk).revoked_at

    assert api_tokens_revoke(tokens=ApiToken.objects.all()) == 1
    assert ApiToken.objects.get(pk=first.pk).revoked_at == at
