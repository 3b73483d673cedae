"""The writers of connections (SPEC §15 M1): create one for a user (the token is answered once
and never stored), revoke one. The page, the command and the admin call these."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction

from config.clock import db_now
from config.errors import NotFound, ValidationError
from conversations.models import Character

from . import credentials
from .models import ACCESS_ORDER, EXPIRY_DAYS, Connection

NAME_MAX = 100


@dataclass
class Created:
    connection: Connection
    token: str  # shown once


def connection_create(
    *, user, name: str, access: str = "read", characters=None, days: int = 90
) -> Created:
    """A new connection for `user`: `characters` is None for all of them, else the slugs it
    may act for (at least one, each known)."""
    name = (name or "").strip() if isinstance(name, str) else ""
    if not name or len(name) > NAME_MAX or not name.isprintable():
        raise ValidationError(
            f"Give the connection a name of 1 to {NAME_MAX} printable characters.", field="name"
        )
    if access not in ACCESS_ORDER:
        raise ValidationError("Choose read, write or forget.", field="access")
    if days not in EXPIRY_DAYS:
        raise ValidationError("Choose 30, 90 or 365 days.", field="expiry")
    chosen = []
    if characters is not None:
        slugs = sorted(set(characters))
        chosen = list(Character.objects.filter(slug__in=slugs))
        if not slugs or len(chosen) != len(slugs):
            raise ValidationError("Choose characters the companion has.", field="characters")
    raw, digest, prefix = credentials.new_token()
    now = db_now()
    with transaction.atomic():
        connection = Connection.objects.create(
            user=user,
            name=name,
            access=access,
            all_characters=characters is None,
            token_hash=digest,
            prefix=prefix,
            created_at=now,
            expires_at=now + timedelta(days=days),
        )
        if chosen:
            connection.characters.set(chosen)
    return Created(connection, raw)


def connection_revoke(*, connection_id, user=None) -> Connection:
    """Revoke a connection now (of `user` when given: another user's id is not found). A
    revoked connection stays revoked; what it stored stays the user's."""
    with transaction.atomic():
        qs = Connection.objects.select_for_update().filter(pk=connection_id)
        if user is not None:
            qs = qs.filter(user=user)
        connection = qs.first() if isinstance(connection_id, int) else None
        if connection is None:
            raise NotFound("No such connection.")
        if connection.revoked_at is None:
            connection.revoked_at = db_now()
            connection.save(update_fields=["revoked_at"])
    return connection


def connections_revoke(queryset) -> int:
    """Support's bulk revoke (the admin action)."""
    return queryset.filter(revoked_at__isnull=True).update(revoked_at=db_now())
