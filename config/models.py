import hashlib
import secrets

from django.db import models


def hash_token(raw: str) -> str:
    # Tokens are long random strings, so one round of SHA-256 is enough (no dictionary to guess
    # from); it also lets authentication look the token up by an indexed equality.
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """A chat-runtime credential (SPEC §10). Only its hash is stored; revoke it in the admin."""

    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=8, editable=False, help_text="First characters, to recognise a token."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, name: str) -> tuple["ApiToken", str]:
        raw = "cm_" + secrets.token_urlsafe(32)
        token = cls.objects.create(name=name, token_hash=hash_token(raw), prefix=raw[:8])
        return token, raw

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class CatalogVersion(models.Model):
    """One row (id 1) whose `version` changes whenever catalog data does (the key registry,
    capabilities, product-default rules, characters). Database triggers on those tables set it
    (see `config.catalog`), so every worker and machine sees a change however it was made. The
    value is random, not a counter: compared only for equality, it never comes back after a
    rolled-back change or a flushed table, as a counter's would."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(id=1), name="catalog_version_singleton")
        ]

    def __str__(self) -> str:
        return f"catalog {self.version}"


class ThrottleWindow(models.Model):
    """A fixed-window API throttle counter (SPEC §12 O4) when the shared cache is the database:
    one row per scope and token, counted with one atomic upsert (`config.api.RuntimeThrottle`)."""

    key = models.CharField(max_length=200, primary_key=True)
    window_start = models.BigIntegerField()
    hits = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.key} {self.hits}"
