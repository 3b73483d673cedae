"""The boundaries page's tests meet the world every page test meets (tests/conftest.py):
sam with Captain Rowan (`captain-rowan`) in their conversation, not the Rowan that
tests/policy/conftest.py makes for the policy services' tests."""

from tests.conftest import rowan  # noqa: F401 (the fixture, over tests/policy/conftest.py's)
