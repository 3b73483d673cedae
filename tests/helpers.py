import pytest
from django.conf import settings

ON_POSTGRES = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")

# DESIGN: concurrency claims are proven with real threads on PostgreSQL; SQLite serialises
# writers, so there the same tests would prove nothing.
postgres_only = pytest.mark.skipif(
    not ON_POSTGRES, reason="needs PostgreSQL: real concurrent transactions and row locks"
)
