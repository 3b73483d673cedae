"""W12: the stored statuses (`expired`, `superseded`) written from the pure normalisation plan,
by the `normalise_statuses` command and support's "normalise" action."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction

from config.clock import db_now

from .. import normalisation
from ..models import MemoryRecord
from ..selectors.records import records_to_domain
from .asserting import lock_profile

log = logging.getLogger("companion.memory")


# ---------------------------------------------------------------------------------------------
# Normalisation (W12)


def memory_normalise(*, user=None, now: datetime | None = None, batch_users: int = 200) -> int:
    """W12: write stored statuses (`expired`, `superseded`) from the pure plan. Idempotent and
    safe at any time: each user is done in its own transaction under the user's lock, and the
    plan marks chains oldest first, so a partial run leaves a consistent state."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    users = (
        User.objects.filter(pk=user.pk)
        if user is not None
        else User.objects.filter(memories__isnull=False).distinct()
    )
    changed = 0
    for u in users.iterator(chunk_size=batch_users):
        with transaction.atomic():
            lock_profile(u)
            at = now or db_now()
            records = records_to_domain(MemoryRecord.objects.filter(user=u), u.username)
            for change in normalisation.plan_normalisation(records, at):
                MemoryRecord.objects.filter(pk=change.id, user=u).exclude(
                    status="forgotten"
                ).update(status=change.status, status_since=change.status_since)
                changed += 1
    log.info("memory_normalise changed=%d", changed)
    return changed
