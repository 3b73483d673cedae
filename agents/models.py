"""A personal connection (SPEC §15 M1): a credential of one user that lets an assistant use
their memory over MCP, for some or all characters, with an access level and an expiry. Only
the token's hash is stored, as for API tokens (`config.models.ApiToken`)."""

from django.conf import settings
from django.db import models

from conversations.models import Character

ACCESS_LEVELS = (
    ("read", "Read"),
    ("write", "Read and write"),
    ("forget", "Read, write and forget"),
)
# What each level grants, in order: a level grants its own and every one before it.
ACCESS_ORDER = ("read", "write", "forget")
EXPIRY_DAYS = (30, 90, 365)


class Connection(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="connections"
    )
    name = models.CharField(max_length=100)
    all_characters = models.BooleanField(default=True)
    characters = models.ManyToManyField(Character, blank=True, related_name="+")
    access = models.CharField(max_length=10, choices=ACCESS_LEVELS, default="read")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=12, editable=False, help_text="First characters, to recognise a token."
    )
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="connection_user_idx")]
        # Support revokes a connection on a person's behalf; it never changes one otherwise.
        permissions = [("revoke_connection", "Can revoke a person's connection")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def grants(self, level: str) -> bool:
        return ACCESS_ORDER.index(self.access) >= ACCESS_ORDER.index(level)
