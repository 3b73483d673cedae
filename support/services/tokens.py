"""Runtime tokens revoked by support (the admin's action on `config.models.ApiToken`): each
still active one revoked at the database's time, refused by this process at once and by the
others within `API_TOKEN_CACHE_SECONDS` (`config.credentials`)."""

from __future__ import annotations

from django.db import transaction

from config import credentials
from config.clock import db_now


def api_tokens_revoke(*, tokens) -> int:
    """Revoke the active tokens of the queryset `tokens`; answers how many were."""
    active = tokens.filter(revoked_at__isnull=True)
    with transaction.atomic():
        revoked = list(active.select_for_update())
        count = active.update(revoked_at=db_now())
    credentials.forget(revoked)
    return count
