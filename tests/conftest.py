import pytest
from django.db import connection


@pytest.fixture
def api_token(db):
    from config.models import ApiToken

    _, raw = ApiToken.issue("test-runtime")
    return raw


@pytest.fixture
def api(api_token):
    """A DRF client authenticated as the chat runtime (Bearer token)."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    return client
