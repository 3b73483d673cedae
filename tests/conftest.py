import pytest


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


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Real hashers are slow on purpose; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
